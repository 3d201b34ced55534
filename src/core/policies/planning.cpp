#include "core/policies/planning.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace braid::core::planning {

std::vector<LaneId> live_lanes(const Scheduler& s) {
  std::vector<LaneId> out;
  for (LaneId l = 0; l < s.lane_count(); ++l)
    if (s.lane_alive(l)) out.push_back(l);
  return out;
}

bool has_pipelined_room(const Scheduler& s, LaneId l, Bytes piece, double gain, Bytes floor) {
  // The transport's rate goes with the path's own round trip: the piece RTT
  // (srtt) of a lane that just stalled or queued can be seconds.
  const Bytes bdp = std::max(s.planning_rate(l).bytes_in(s.planning_rtt(l)),
                             s.transport_rate(l).bytes_in(s.estimator(l).min_rtt()));
  const Bytes cap = std::max(Bytes(static_cast<uint64_t>(bdp.as_double() * gain)), floor) + piece;
  return s.outstanding(l) < cap;
}

WaterFill water_fill(const Scheduler& s, Time now, Bytes remaining) { return water_fill(s, now, remaining, {}); }

WaterFill water_fill(const Scheduler& s, Time now, Bytes remaining, const std::vector<Duration>& margin) {
  WaterFill wf;
  wf.share.assign(s.lane_count(), Bytes(0));
  wf.margin.assign(s.lane_count(), Duration::zero());
  struct Entry {
    LaneId lane;
    double start_s;  // seconds from now when the lane can deliver new bytes
    double rate;     // bytes/s
  };
  std::vector<Entry> lanes;
  for (LaneId l : live_lanes(s)) {
    if (s.planning_rate(l).is_zero()) continue;
    Time c = s.free_at(l, now) + s.planning_rtt(l);
    if (l < margin.size()) {
      wf.margin[l] = margin[l];
      c += margin[l];
    }
    // A lane still ramping up moves faster than its acks have shown yet.
    lanes.push_back({l, (c - now).to_seconds(), s.room_rate(l).bytes_per_second()});
  }
  if (lanes.empty()) return wf;
  std::sort(lanes.begin(), lanes.end(), [](const Entry& a, const Entry& b) { return a.start_s < b.start_s; });

  // Sweep: with the first k lanes active, T = (R + Σ r_j c_j) / Σ r_j; valid
  // while T does not pass the next lane's start.
  double sum_r = 0, sum_rc = 0, t = lanes.front().start_s;
  const double R = remaining.as_double();
  for (size_t k = 0; k < lanes.size(); ++k) {
    sum_r += lanes[k].rate;
    sum_rc += lanes[k].rate * lanes[k].start_s;
    t = (R + sum_rc) / sum_r;
    if (k + 1 == lanes.size() || t <= lanes[k + 1].start_s) break;
  }
  wf.finish = now + Duration::seconds_f(t);
  for (const auto& e : lanes) {
    if (t > e.start_s) wf.share[e.lane] = Bytes(static_cast<uint64_t>(e.rate * (t - e.start_s)));
  }
  return wf;
}

WaterFill end_plan(const Scheduler& s, Time now, Bytes remaining) {
  const WaterFill plain = water_fill(s, now, remaining);
  if (plain.finish == Time::never()) return plain;
  std::vector<Duration> margin(s.lane_count(), Duration::zero());
  const Duration left = plain.finish - now;
  for (LaneId l : live_lanes(s)) {
    if (s.planning_rate(l).is_zero()) continue;
    const Duration horizon = s.completion_if_assigned(l, s.plan().chunk_size(), now) - now;
    margin[l] = std::min(left, horizon) * std::max(kPlanError, s.estimator(l).relative_deviation());
  }
  return water_fill(s, now, remaining, margin);
}

namespace {

// Only when clearly sooner: a copy that barely wins wastes a whole piece.
Duration duplicate_margin(Duration theirs_from_now) {
  return std::max(Duration::millis(2), theirs_from_now * 0.1);
}

}  // namespace

bool holds_copy(const Scheduler& s, LaneId l, PieceId piece) {
  for (const auto& f : s.flights(l))
    if (f.active() && f.piece == piece) return true;
  return false;
}

// When each piece in flight lands at the earliest, over all its copies.
std::map<PieceId, Time> first_landings(const Scheduler& s, Time now) {
  std::map<PieceId, Time> out;
  for (LaneId l : live_lanes(s))
    for (const auto& f : s.flights(l)) {
      if (!f.active()) continue;
      const Time t = s.expected_completion(l, f, now);
      auto [it, fresh] = out.try_emplace(f.piece, t);
      if (!fresh) it->second = std::min(it->second, t);
    }
  return out;
}

std::optional<Pick> best_duplicate(const Scheduler& s, LaneId l, Time now, uint32_t max_copies) {
  if (s.planning_rate(l).is_zero()) return std::nullopt;
  // Against the copy that lands first: one more only where it beats them all.
  const std::map<PieceId, Time> lands = first_landings(s, now);
  std::optional<Pick> best;
  Duration best_gain = Duration::zero();
  for (LaneId other : live_lanes(s)) {
    if (other == l) continue;
    for (const auto& f : s.flights(other)) {
      if (!f.active() || s.active_copies(f.piece) >= max_copies) continue;
      if (s.plan().piece(f.piece).state == PieceState::delivered || holds_copy(s, l, f.piece)) continue;
      const Time theirs = lands.at(f.piece);
      const Time mine = s.completion_if_assigned(l, f.length, now);
      if (mine + duplicate_margin(theirs - now) >= theirs) continue;
      const Duration gain = theirs - mine;
      if (gain > best_gain) {
        best_gain = gain;
        best = Pick{l, f.piece, std::nullopt, true, std::nullopt};
      }
    }
  }
  return best;
}

std::optional<Pick> best_rescue(const Scheduler& s, LaneId l, Time now, const WaterFill& plan) {
  if (plan.finish == Time::never() || s.planning_rate(l).is_zero() || running_late(s, l, now)) return std::nullopt;
  double all = 0;
  for (LaneId k : live_lanes(s)) all += s.room_rate(k).bytes_per_second();
  std::optional<Pick> best;
  Duration best_gain = Duration::zero();
  for (LaneId other : live_lanes(s)) {
    if (other == l) continue;
    const bool measured = !s.planning_rate(other).is_zero();
    const double others = all - s.room_rate(other).bytes_per_second();
    if (others <= 0) continue;
    for (const auto& f : s.flights(other)) {
      if (!f.active() || s.active_copies(f.piece) >= 2) continue;
      if (s.plan().piece(f.piece).state == PieceState::delivered) continue;
      if (!measured && f.state != FlightState::sending) continue;
      // A probe says nothing of when it lands: count it as late again as it
      // has been out (a probe that beats the plan's end is left to measure).
      const Time theirs = measured ? s.expected_completion(other, f, now) : now + (now - f.started);
      if (theirs <= plan.finish + Duration::seconds_f(f.length.as_double() / others)) continue;
      const Time mine = s.completion_if_assigned(l, f.length, now);
      if (mine + duplicate_margin(theirs - now) >= theirs) continue;
      if (theirs - mine > best_gain) {
        best_gain = theirs - mine;
        const bool queued = f.state == FlightState::queued;
        best = Pick{l, f.piece, std::nullopt, !queued || f.duplicate, queued ? std::optional<LaneId>(other) : std::nullopt};
      }
    }
  }
  return best;
}

bool running_late(const Scheduler& s, LaneId l, Time now) {
  for (const auto& f : s.flights(l))
    if (f.state == FlightState::sending && s.predicted_ack(l, f, now) < now) return true;
  return false;
}

std::optional<Pick> best_move(const Scheduler& s, LaneId l, Time now) {
  // A lane whose own pieces are overdue looks free by its estimate, and may be dark.
  if (s.planning_rate(l).is_zero() || running_late(s, l, now)) return std::nullopt;
  std::optional<Pick> best;
  Duration best_gain = Duration::zero();
  for (LaneId other : live_lanes(s)) {
    if (other == l) continue;
    for (const auto& f : s.flights(other)) {
      if (f.state != FlightState::queued || s.plan().piece(f.piece).state == PieceState::delivered) continue;
      const Time theirs = s.expected_completion(other, f, now);
      const Time mine = s.completion_if_assigned(l, f.length, now);
      const Duration margin = std::max(Duration::millis(1), (theirs - now) * 0.02);
      if (mine + margin >= theirs) continue;
      if (theirs - mine > best_gain) {
        best_gain = theirs - mine;
        best = Pick{l, f.piece, std::nullopt, f.duplicate, other};
      }
    }
  }
  return best;
}

std::optional<Time> next_duplicate_time(const Scheduler& s, Time now, uint32_t max_copies) {
  // A piece's copies, each as best_duplicate sees it at a later time t: a
  // copy being sent lands at its predicted ack p until then, and past it is
  // counted as late by as long again (expected_completion: 2t - p); a
  // queued copy lands at p; an unmeasured lane's copy never.
  struct Copy {
    Time p;
    bool sending;
  };
  std::map<PieceId, std::vector<Copy>> copies;
  for (LaneId other : live_lanes(s))
    for (const auto& f : s.flights(other)) {
      // An unmeasured lane's copy lands never: beaten whenever, no condition.
      if (!f.active() || s.active_copies(f.piece) >= max_copies || s.planning_rate(other).is_zero()) continue;
      copies[f.piece].push_back({s.predicted_ack(other, f, now), f.state == FlightState::sending});
    }
  std::optional<Time> earliest;
  for (LaneId l : live_lanes(s)) {
    const Rate mine = s.planning_rate(l);
    if (mine.is_zero() || s.active_flights(l) > 0 || s.consecutive_stalls(l) > 0) continue;
    for (const auto& [piece, cs] : copies) {
      const Duration d = mine.transfer_time(s.plan().piece(piece).length) + s.planning_rtt(l);
      const auto beats_all = [&](Time t) {
        for (const auto& c : cs) {
          const Time theirs = c.sending && t > c.p ? t + (t - c.p) : c.p;
          if (t + d + duplicate_margin(theirs - t) >= theirs) return false;
        }
        return true;
      };
      // A copy being sent is beaten once t > p + wait, and stays beaten; the
      // first such moment at which the others are beaten too (on time, or late
      // as well) is when a copy on `l` starts to pay.
      const Duration wait = std::max(d + Duration::millis(2), d / 0.9) + Duration::micros(1);
      std::vector<Time> candidates;
      for (const auto& c : cs)
        if (c.sending && c.p + wait > now) candidates.push_back(c.p + wait);
      std::sort(candidates.begin(), candidates.end());
      for (Time t : candidates) {
        if (earliest && t >= *earliest) break;
        if (beats_all(t)) {
          earliest = t;
          break;
        }
      }
    }
  }
  return earliest;
}

}  // namespace braid::core::planning
