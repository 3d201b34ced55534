#include "core/policies/simple_policies.hpp"

#include <algorithm>

#include "core/policies/planning.hpp"
#include "core/scheduler.hpp"

namespace braid::core {
namespace {

std::optional<PieceId> next_piece(const ChunkPlan& plan) {
  if (auto od = plan.next_overdue()) return od;
  return plan.next_pending();
}

}  // namespace

std::optional<Pick> QueuePolicy::pick(const Scheduler& s, Time) {
  auto p = next_piece(s.plan());
  if (!p) return std::nullopt;
  for (LaneId l : planning::live_lanes(s))
    if (s.active_flights(l) == 0) return Pick{l, *p, std::nullopt, false, std::nullopt};
  return std::nullopt;
}

std::optional<Pick> RoundRobinPolicy::pick(const Scheduler& s, Time) {
  auto p = next_piece(s.plan());
  if (!p || s.lane_count() == 0) return std::nullopt;
  const Bytes chunk = s.plan().chunk_size();
  for (size_t i = 0; i < s.lane_count(); ++i) {
    const LaneId l = static_cast<LaneId>((next_ + i) % s.lane_count());
    if (!s.lane_alive(l) || !planning::has_pipelined_room(s, l, chunk)) continue;
    next_ = static_cast<LaneId>((l + 1) % s.lane_count());
    return Pick{l, *p, std::nullopt, false, std::nullopt};
  }
  return std::nullopt;
}

std::optional<Pick> MinRttPolicy::pick(const Scheduler& s, Time) {
  auto p = next_piece(s.plan());
  if (!p) return std::nullopt;
  std::vector<LaneId> lanes = planning::live_lanes(s);
  // Lanes with no RTT sample yet sort first, as a new MPTCP subflow does.
  std::stable_sort(lanes.begin(), lanes.end(),
                   [&](LaneId a, LaneId b) { return s.planning_rtt(a) < s.planning_rtt(b); });
  const Bytes chunk = s.plan().chunk_size();
  for (LaneId l : lanes)
    if (planning::has_pipelined_room(s, l, chunk)) return Pick{l, *p, std::nullopt, false, std::nullopt};
  return std::nullopt;
}

}  // namespace braid::core
