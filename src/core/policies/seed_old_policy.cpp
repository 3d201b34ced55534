#include "core/policies/seed_old_policy.hpp"

#include "core/policies/planning.hpp"
#include "core/scheduler.hpp"

namespace braid::core {

PolicyRules SeedOldPolicy::rules() const {
  PolicyRules r;
  r.default_hint = Rate::mbit(400);
  r.estimator.learn_from_late_acks = false;
  r.stall_factor = 2.0;
  r.min_stall = Duration::zero();
  r.stall_cap = Duration::seconds(3);
  r.deadline_from_assignment = true;
  r.stall_drops_everywhere = true;
  r.estimate_from_writes = true;
  return r;
}

std::optional<Pick> SeedOldPolicy::pick(const Scheduler& s, Time now) {
  const ChunkPlan& plan = s.plan();
  std::optional<PieceId> next = plan.next_overdue();
  if (!next) next = plan.next_pending();
  if (!next) return std::nullopt;
  const Bytes len = plan.piece(*next).length;
  // Push to the lane the estimate says finishes first, if its window has room.
  std::optional<LaneId> best;
  for (LaneId l : planning::live_lanes(s)) {
    if (s.active_flights(l) >= kPushWindow) continue;
    if (!best || s.completion_if_assigned(l, len, now) < s.completion_if_assigned(*best, len, now)) best = l;
  }
  if (!best) return std::nullopt;
  return Pick{*best, *next, std::nullopt, false, std::nullopt};
}

}  // namespace braid::core
