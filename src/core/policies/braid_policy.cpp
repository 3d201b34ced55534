#include "core/policies/braid_policy.hpp"

#include <algorithm>

#include "core/policies/planning.hpp"
#include "core/scheduler.hpp"

namespace braid::core {
namespace {

// Down, never up: a share is what the lane can finish in time, and a few
// KiB over it cost a slow lane tens of milliseconds past everyone else.
Bytes round_down_to_granule(Bytes b, Bytes granule) {
  const uint64_t g = granule.count();
  return Bytes(b.count() / g * g);
}

}  // namespace

std::optional<Pick> BraidPolicy::pick(const Scheduler& s, Time now) {
  last_pick_ = now;
  if (s.plan().unassigned_bytes().count() > 0) {
    if (auto p = pick_new_work(s, now)) return p;
    return pick_probe(s, now);
  }
  // Everything is handed out. A lane with room takes over a piece still
  // queued on another lane if it would deliver it sooner (nothing was sent,
  // so nothing is wasted); an idle lane may race a piece being sent.
  std::vector<LaneId> lanes = planning::live_lanes(s);
  std::sort(lanes.begin(), lanes.end(), [&](LaneId a, LaneId b) {
    return s.free_at(a, now) + s.planning_rtt(a) < s.free_at(b, now) + s.planning_rtt(b);
  });
  for (LaneId l : lanes) {
    if (s.consecutive_stalls(l) > 0 || s.planning_rate(l).is_zero()) continue;
    if (has_room(s, l) || s.active_flights(l) == 0)
      if (auto m = planning::best_move(s, l, now)) return m;
    if (s.active_flights(l) > 0) continue;
    if (auto d = planning::best_duplicate(s, l, now)) return d;
  }
  return std::nullopt;
}

std::optional<Pick> BraidPolicy::pick_new_work(const Scheduler& s, Time now) {
  const ChunkPlan& plan = s.plan();
  const Bytes chunk = plan.chunk_size();
  // Overdue pieces first: they are late already.
  const std::optional<PieceId> next = plan.next_overdue() ? plan.next_overdue() : plan.next_pending();
  if (!next) return std::nullopt;
  const Piece& piece = plan.piece(*next);
  // A piece ever handed out keeps its size (an ack must always mean the same bytes).
  const bool cuttable = piece.state == PieceState::pending && !piece.ever_assigned;
  const planning::WaterFill wf = planning::end_plan(s, now, plan.unassigned_bytes());

  std::vector<LaneId> lanes = planning::live_lanes(s);
  std::sort(lanes.begin(), lanes.end(), [&](LaneId a, LaneId b) {
    return s.completion_if_assigned(a, chunk, now) < s.completion_if_assigned(b, chunk, now);
  });
  // The lane that would complete this piece first among those that can take
  // work at all, busy or not (earliest completion first). Waiting for it is
  // right while it is busy; it gets room again with its next ack.
  std::optional<LaneId> best;
  for (LaneId l : lanes) {
    if (s.planning_rate(l).is_zero() || s.consecutive_stalls(l) > 0) continue;
    if (!best || s.completion_if_assigned(l, piece.length, now) < s.completion_if_assigned(*best, piece.length, now))
      best = l;
  }

  for (LaneId l : lanes) {
    if (s.planning_rate(l).is_zero()) {
      // Nothing known yet: one small piece measures the lane (MISSION.md §1:
      // a lane holds one piece until an ack has measured it).
      if (s.active_flights(l) == 0 && s.consecutive_stalls(l) == 0) {
        if (cuttable) return Pick{l, *next, std::min(kMinPiece, piece.length), false, std::nullopt};
        // A whole piece (back from a stall or a lane that died) measures it
        // as well if it is probe-sized — and must go somewhere when no
        // measured lane is left to take it (every UDP lane dead, only new
        // TCP lanes: nothing was handed out again, for ever).
        if (piece.length <= kMinPiece || !best) return Pick{l, *next, std::nullopt, false, std::nullopt};
      }
      continue;
    }
    if (s.consecutive_stalls(l) > 0) continue;  // only probes until it delivers again
    if (!has_room(s, l)) continue;
    // A piece another lane holds that would land after the plan's end: this
    // lane takes it first, as planned work, while the others can still even
    // out the end around it.
    if (auto r = planning::best_rescue(s, l, now, wf)) return r;
    const bool earliest = best && l == *best;
    // What the lane takes must be done its margin before the plan's end.
    auto in_time = [&](Bytes len) { return s.completion_if_assigned(l, len, now) + wf.margin[l] <= wf.finish; };

    if (!cuttable) {
      // Whole pieces go where they fit the plan, or to the lane that completes them first.
      if (in_time(piece.length) || earliest) return Pick{l, *next, std::nullopt, false, std::nullopt};
      continue;
    }
    const Bytes share = wf.share[l];
    if (share >= piece.length) return Pick{l, *next, std::nullopt, false, std::nullopt};
    Bytes cut = round_down_to_granule(share, kGranule);
    if (cut < kMinPiece) {
      // Less than the smallest piece fits: take one only if it still ends
      // in time, or if no lane would finish this piece sooner.
      if (!earliest && !in_time(std::min(kMinPiece, piece.length))) continue;
      cut = kMinPiece;
    }
    if (cut >= piece.length) return Pick{l, *next, std::nullopt, false, std::nullopt};
    return Pick{l, *next, cut, false, std::nullopt};
  }
  return std::nullopt;
}

bool BraidPolicy::has_room(const Scheduler& s, LaneId l) {
  const Bytes floor = std::min(kInFlightFloor, s.room_rate(l).bytes_in(kInFlightFloorTime));
  return planning::has_pipelined_room(s, l, s.plan().chunk_size(), 2.0, floor);
}

Time BraidPolicy::probe_allowed_at(const Scheduler& s, LaneId l) const {
  // Back-off 0.5 s, 1 s, 2 s, 4 s after consecutive stalls — unless the
  // lane's transport still hears acks: then it is slow, not dead (a
  // background lane yielding to other traffic), and must get work again
  // as soon as it can take it.
  if (s.transport_heard(l) != Time::never() && s.transport_heard(l) > s.last_stall(l))
    return s.last_stall(l) + Duration::millis(250);
  const uint32_t n = std::min<uint32_t>(s.consecutive_stalls(l), 4);
  return s.last_stall(l) + Duration::millis(250) * static_cast<double>(1u << n);
}

std::optional<Pick> BraidPolicy::pick_probe(const Scheduler& s, Time now) {
  const ChunkPlan& plan = s.plan();
  // The smallest useful probe: a fresh 64 KiB cut if one can be made, else
  // whatever piece waits first (a piece already handed out keeps its size).
  std::optional<Pick> probe;
  if (auto p = plan.next_pending(); p && !plan.piece(*p).ever_assigned) {
    probe = Pick{0, *p, std::min(kMinPiece, plan.piece(*p).length), false, std::nullopt};
  } else if (auto od = plan.next_overdue()) {
    probe = Pick{0, *od, std::nullopt, false, std::nullopt};
  } else if (p) {
    probe = Pick{0, *p, std::nullopt, false, std::nullopt};
  }
  if (!probe) return std::nullopt;
  const planning::WaterFill wf = planning::water_fill(s, now, plan.unassigned_bytes());
  for (LaneId l : planning::live_lanes(s)) {
    if (s.consecutive_stalls(l) == 0 || s.active_flights(l) > 0) continue;
    if (now < probe_allowed_at(s, l)) continue;
    // Not worth it when the others finish sooner than a stall would be noticed.
    if (wf.finish != Time::never() && wf.finish - now < s.rules().min_stall * 2 && has_healthy_lane(s)) continue;
    probe->lane = l;
    return probe;
  }
  return std::nullopt;
}

bool BraidPolicy::has_healthy_lane(const Scheduler& s) {
  for (LaneId l : planning::live_lanes(s))
    if (s.consecutive_stalls(l) == 0) return true;
  return false;
}

std::optional<Time> BraidPolicy::next_wakeup(const Scheduler& s) const {
  std::optional<Time> t;
  if (s.plan().unassigned_bytes().count() == 0) t = planning::next_duplicate_time(s, last_pick_);
  for (LaneId l : planning::live_lanes(s)) {
    if (s.consecutive_stalls(l) == 0 || s.active_flights(l) > 0) continue;
    const Time at = probe_allowed_at(s, l);
    // A time already considered by pick() needs no wake-up: it declined then.
    if (at > last_pick_ && (!t || at < *t)) t = at;
  }
  return t;
}

}  // namespace braid::core
