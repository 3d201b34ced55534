#include "core/policies/ecf_policy.hpp"

#include <algorithm>

#include "core/policies/planning.hpp"
#include "core/scheduler.hpp"

namespace braid::core {

std::optional<Pick> EcfPolicy::pick(const Scheduler& s, Time now) {
  const ChunkPlan& plan = s.plan();
  const std::vector<LaneId> lanes = planning::live_lanes(s);
  std::optional<PieceId> next = plan.next_overdue();
  if (!next) next = plan.next_pending();

  if (!next) {
    for (LaneId l : lanes) {
      if (s.active_flights(l) > 0) continue;
      // Two copies at most: the reference keeps the rule it was measured with.
      if (auto d = planning::best_duplicate(s, l, now, 2)) return d;
    }
    return std::nullopt;
  }

  const Bytes len = plan.piece(*next).length;
  // The fastest lane for this piece, busy or not.
  std::optional<LaneId> fastest;
  for (LaneId l : lanes) {
    if (s.planning_rate(l).is_zero()) continue;
    if (!fastest || s.completion_if_assigned(l, len, now) < s.completion_if_assigned(*fastest, len, now))
      fastest = l;
  }
  for (LaneId l : lanes) {
    if (s.active_flights(l) > 0) continue;  // one piece in flight per lane
    if (s.planning_rate(l).is_zero()) return Pick{l, *next, std::nullopt, false, std::nullopt};  // measure it
    if (l == *fastest) return Pick{l, *next, std::nullopt, false, std::nullopt};
    const Rate rf = s.planning_rate(*fastest);
    const Time fastest_does_all =
        s.free_at(*fastest, now) + rf.transfer_time(plan.unassigned_bytes()) + s.planning_rtt(*fastest);
    if (s.completion_if_assigned(l, len, now) <= fastest_does_all) return Pick{l, *next, std::nullopt, false, std::nullopt};
  }
  return std::nullopt;
}

}  // namespace braid::core
