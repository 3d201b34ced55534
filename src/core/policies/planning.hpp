// Shared reasoning for policies: when a lane has room, when the transfer can
// end, and which in-flight piece another lane could finish sooner.
#pragma once

#include <optional>
#include <vector>

#include "core/scheduler.hpp"

namespace braid::core::planning {

/// Lanes that are alive, in id order.
std::vector<LaneId> live_lanes(const Scheduler& s);

/// Pipelined room: the lane may hold what its path holds in flight
/// (rate × RTT, times `gain` to leave space for the estimate to grow) plus
/// one piece on top, so it never waits for an ack with nothing to send.
/// `floor` is the least a lane may hold whatever its estimate says.
bool has_pipelined_room(const Scheduler& s, LaneId l, Bytes piece, double gain = 2.0, Bytes floor = Bytes(0));

/// The earliest time all remaining unassigned bytes can be acked, if every
/// lane with a known rate takes exactly its share ("water-filling"): lane j
/// becomes available at c_j = free_at_j + rtt_j and then moves r_j bytes a
/// second, so T solves  Σ_j r_j · max(0, T − c_j) = unassigned bytes.
struct WaterFill {
  Time finish = Time::never();
  /// Bytes lane j should still take to finish by `finish` (0 for dead/unknown lanes).
  std::vector<Bytes> share;
};
WaterFill water_fill(const Scheduler& s, Time now, Bytes remaining);

/// End of transfer: the in-flight piece on another lane that lane `l` could
/// deliver soonest relative to its current lane, if `l` would beat that lane
/// by a useful margin. Pieces with `max_copies` live copies are skipped.
std::optional<Pick> best_duplicate(const Scheduler& s, LaneId l, Time now, uint32_t max_copies = 2);

/// The earliest moment after `now` at which best_duplicate() would start
/// answering for some idle lane because a piece has become late enough.
/// Nothing else happens at the end of a transfer to wake the scheduler then.
std::optional<Time> next_duplicate_time(const Scheduler& s, Time now, uint32_t max_copies = 2);

}  // namespace braid::core::planning
