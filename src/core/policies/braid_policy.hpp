// braid's own scheduler. Every decision asks one question: when can the whole
// transfer be done, and does this assignment bring that moment closer?
//
//  * Water-filling plan: the earliest finish T has every lane busy until T
//    (planning::end_plan). A lane takes work only up to its share of that
//    plan, less a margin for the uncertainty of what it commits to (large
//    for a slow lane, whose one piece may span the rest of the transfer), so
//    a slow lane is used only as much as it surely shortens the transfer.
//  * Full pipes: a lane may hold rate × RTT × 2 (at least 250 ms of its rate,
//    up to 4 MiB) plus one piece, so it never idles waiting for an ack (the
//    seed's one-chunk rule lost a round trip per chunk).
//  * Even ends: when a lane's share is less than a chunk, it takes a byte
//    range of exactly its share, so all lanes finish together.
//  * Overdue pieces (back from a stall) go to the lane that completes them
//    first (ECF).
//  * Rescue: a piece another lane holds that would land after the plan's
//    end is taken first (copied, or moved if not started) by a lane that
//    delivers it clearly sooner, while the rest can still even out around it.
//  * End of transfer: a lane with room takes over pieces queued (not
//    started) elsewhere that it would deliver sooner; an idle lane duplicates
//    an in-flight piece only if it would deliver it clearly sooner than the
//    lane carrying it (ECF duplicates).
//  * A lane that stalled is probed with one small piece, with back-off, so
//    it rejoins when it recovers.
#pragma once

#include <vector>

#include "core/policy.hpp"

namespace braid::core {

class BraidPolicy final : public Policy {
 public:
  /// Smallest byte range a chunk is cut into, and the unit shares round to.
  static constexpr Bytes kMinPiece = Bytes::kib(64);
  static constexpr Bytes kGranule = Bytes::kib(16);
  /// What a lane may always hold: up to 4 MiB, or 250 ms of its estimated
  /// rate if that is less. A new TCP connection grows its window faster than
  /// acks over a round trip can raise the estimate, and a lane starved of
  /// data at start-up never shows its rate; a slow lane's floor stays tiny,
  /// so it commits nothing early that better estimates would give elsewhere.
  static constexpr Bytes kInFlightFloor = Bytes::mib(4);
  static constexpr Duration kInFlightFloorTime = Duration::millis(250);

  std::string_view name() const override { return "braid"; }
  std::optional<Pick> pick(const Scheduler& s, Time now) override;
  std::optional<Time> next_wakeup(const Scheduler& s) const override;

 private:
  std::optional<Pick> pick_new_work(const Scheduler& s, Time now);
  std::optional<Pick> pick_probe(const Scheduler& s, Time now);
  Time probe_allowed_at(const Scheduler& s, LaneId l) const;
  static bool has_healthy_lane(const Scheduler& s);
  /// Pipelined room (rule 2): rate × RTT × 2, at least the in-flight floor, plus a chunk.
  static bool has_room(const Scheduler& s, LaneId l);

  Time last_pick_;
};

}  // namespace braid::core
