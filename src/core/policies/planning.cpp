#include "core/policies/planning.hpp"

#include <algorithm>

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

WaterFill water_fill(const Scheduler& s, Time now, Bytes remaining) {
  WaterFill wf;
  wf.share.assign(s.lane_count(), Bytes(0));
  struct Entry {
    LaneId lane;
    double start_s;  // seconds from now when the lane can deliver new bytes
    double rate;     // bytes/s
  };
  std::vector<Entry> lanes;
  for (LaneId l : live_lanes(s)) {
    const Rate r = s.planning_rate(l);
    if (r.is_zero()) continue;
    const Time c = s.free_at(l, now) + s.planning_rtt(l);
    lanes.push_back({l, (c - now).to_seconds(), r.bytes_per_second()});
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

namespace {

// Only when clearly sooner: a copy that barely wins wastes a whole piece.
Duration duplicate_margin(Duration theirs_from_now) {
  return std::max(Duration::millis(2), theirs_from_now * 0.1);
}

}  // namespace

std::optional<Pick> best_duplicate(const Scheduler& s, LaneId l, Time now, uint32_t max_copies) {
  if (s.planning_rate(l).is_zero()) return std::nullopt;
  std::optional<Pick> best;
  Duration best_gain = Duration::zero();
  for (LaneId other : live_lanes(s)) {
    if (other == l) continue;
    for (const auto& f : s.flights(other)) {
      if (!f.active() || s.active_copies(f.piece) >= max_copies) continue;
      if (s.plan().piece(f.piece).state == PieceState::delivered) continue;
      const Time theirs = s.expected_completion(other, f, now);
      const Time mine = s.completion_if_assigned(l, f.length, now);
      if (mine + duplicate_margin(theirs - now) >= theirs) continue;
      const Duration gain = theirs - mine;
      if (gain > best_gain) {
        best_gain = gain;
        best = Pick{l, f.piece, std::nullopt, true};
      }
    }
  }
  return best;
}

std::optional<Time> next_duplicate_time(const Scheduler& s, Time now, uint32_t max_copies) {
  std::optional<Time> earliest;
  for (LaneId l : live_lanes(s)) {
    const Rate mine = s.planning_rate(l);
    if (mine.is_zero() || s.active_flights(l) > 0 || s.consecutive_stalls(l) > 0) continue;
    for (LaneId other : live_lanes(s)) {
      const Rate theirs = s.planning_rate(other);
      if (other == l || theirs.is_zero()) continue;
      for (const auto& f : s.flights(other)) {
        if (f.state != FlightState::sending || s.active_copies(f.piece) >= max_copies) continue;
        // Past its predicted ack p, a piece counts as late by as long again
        // (expected_completion), so at time t it is due at 2t - p; an idle lane
        // delivers it at t + d. The copy pays off once t > p + d + margin.
        const Time p = f.started + theirs.transfer_time(f.length) + s.planning_rtt(other);
        const Duration d = mine.transfer_time(f.length) + s.planning_rtt(l);
        const Duration wait = std::max(d + Duration::millis(2), d / 0.9) + Duration::micros(1);
        const Time t = p + wait;
        if (t > now && (!earliest || t < *earliest)) earliest = t;
      }
    }
  }
  return earliest;
}

}  // namespace braid::core::planning
