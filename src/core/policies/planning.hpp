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
/// becomes available at c_j = free_at_j + rtt_j (+ margin_j) and then moves
/// r_j bytes a second, so T solves  Σ_j r_j · max(0, T − c_j) = unassigned
/// bytes. r_j is the larger of the lane's estimate and its transport's rate
/// (room_rate): a lane still ramping up moves faster than its acks show yet.
struct WaterFill {
  Time finish = Time::never();
  /// Bytes lane j should still take to finish by `finish` (0 for dead/unknown lanes).
  std::vector<Bytes> share;
  /// How much before `finish` lane j's share ends (its margin; see end_plan).
  std::vector<Duration> margin;
};
WaterFill water_fill(const Scheduler& s, Time now, Bytes remaining);
WaterFill water_fill(const Scheduler& s, Time now, Bytes remaining, const std::vector<Duration>& margin);

/// The plan braid hands out work by: the water-fill with a margin per lane
/// of its estimate's uncertainty (the samples' relative deviation, at least
/// kPlanError) × its commitment horizon — the time it would take to deliver
/// one more chunk, at most the time left. A lane is committed to a piece
/// once it takes it, and its rate and the others' are estimates: a piece
/// planned to land at T lands after everything else if the lane is a
/// little slower, or the others a little faster, than estimated. A fast
/// lane's horizon is a few tens of milliseconds, so its margin is too; a
/// 1.5 Mbit/s lane's horizon is the rest of the transfer, so it plans to be
/// done a tenth of the remaining time early. Equal lanes get equal margins,
/// which changes nothing between them. The cost is small for exactly the
/// lanes the margin is large for: the bytes it moves, r_j × margin_j, go to
/// lanes Σ r / r_j times as fast.
inline constexpr double kPlanError = 0.1;
WaterFill end_plan(const Scheduler& s, Time now, Bytes remaining);

/// Most live copies of one piece. Two bound the waste; a third is for a
/// piece whose two copies both sit on slow lanes (a metered link's lanes,
/// one rescuing the other) while a fast lane idles at the end.
inline constexpr uint32_t kMaxCopies = 3;

/// End of transfer: the in-flight piece on another lane that lane `l` could
/// deliver soonest relative to its copies, if `l` would beat every copy of
/// it by a useful margin. Pieces with `max_copies` live copies, or one on
/// `l`, are skipped.
std::optional<Pick> best_duplicate(const Scheduler& s, LaneId l, Time now, uint32_t max_copies = kMaxCopies);

/// While work is still unassigned: a piece on another lane expected to land
/// after the plan's end by more than its own bytes would cost the lanes
/// making the plan (len / their rate), which lane `l` would deliver clearly
/// sooner (duplicate_margin). Copied if that lane is sending it, moved if
/// it is only queued there. The probe of a lane not measured yet counts as
/// landing as late again as it has been out. The one with the largest gain.
std::optional<Pick> best_rescue(const Scheduler& s, LaneId l, Time now, const WaterFill& plan);

/// Whether a piece the lane is sending is past its predicted ack.
bool running_late(const Scheduler& s, LaneId l, Time now);

/// End of transfer: a piece queued on another lane and not started there,
/// which lane `l` would deliver sooner (by 1 ms and 2 % of the wait): moving
/// it costs nothing, no byte of it has left. The one with the largest gain;
/// nothing while `l` is running late itself.
std::optional<Pick> best_move(const Scheduler& s, LaneId l, Time now);

/// The earliest moment after `now` at which best_duplicate() would start
/// answering for some idle lane because a piece has become late enough.
/// Nothing else happens at the end of a transfer to wake the scheduler then.
std::optional<Time> next_duplicate_time(const Scheduler& s, Time now, uint32_t max_copies = kMaxCopies);

}  // namespace braid::core::planning
