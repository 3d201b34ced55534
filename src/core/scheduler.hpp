// The transfer scheduler: a sans-IO state machine that decides which piece of
// the transfer goes down which lane. The engine and the simulator drive the
// same object the same way:
//
//   1. feed events with the current time: add_lane, on_send_started,
//      on_written, on_ack, on_lane_closed, on_timeout;
//   2. drain actions: poll_action() until it returns nothing — Assign a piece
//      to a lane, or Cancel a piece on one lane;
//   3. sleep until poll_timeout() (or the next I/O event) and go to 1.
//
// The scheduler owns the chunk plan, one estimator per lane, the stall timers
// and the per-lane truth (bytes, pieces, stalls, duplicates, abandoned).
// A Policy makes the decisions (see policy.hpp).
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/chunk_plan.hpp"
#include "core/lane_estimator.hpp"
#include "core/policy.hpp"
#include "core/units.hpp"

namespace braid::core {

struct LaneConfig {
  std::string name;
  std::optional<Rate> rate_hint;     // used only until the first ack
  std::optional<Duration> rtt_hint;  // used only until the first RTT sample
  /// The lane completes pieces in the order it started them (a TCP stream),
  /// so a piece overtaken by a later one was lost. A UDP lane recovers lost
  /// packets itself and completes pieces out of order: false.
  bool in_order = true;
};

/// Send piece `piece` (bytes [offset, offset+length) of the transfer) on `lane`.
struct Assign {
  LaneId lane = 0;
  PieceId piece = 0;
  ChunkIndex chunk = 0;
  Bytes offset;
  Bytes length;
  bool duplicate = false;
};

/// Stop sending `piece` on `lane` (bytes already on the wire may still arrive).
struct Cancel {
  LaneId lane = 0;
  PieceId piece = 0;
};

using Action = std::variant<Assign, Cancel>;

enum class AckKind { first_delivery, duplicate, unknown };

struct LaneStats {
  Bytes useful_bytes;     // bytes this lane delivered first
  Bytes acked_bytes;      // all bytes acked on this lane, duplicates included
  uint32_t pieces = 0;    // pieces this lane delivered first
  uint32_t stalls = 0;
  uint32_t duplicates = 0;  // pieces this lane delivered that had arrived already
  Bytes duplicate_bytes;
  uint32_t abandoned = 0;   // pieces dropped after the lane had started sending them
  uint32_t assigned = 0;
  Time first_ack = Time::never();
  Time last_ack;
};

enum class FlightState : uint8_t { queued, sending, stalled, cancelled };

/// One copy of a piece on one lane.
struct Flight {
  PieceId piece = 0;
  Bytes length;
  Time assigned;
  Time started = Time::never();
  Time written = Time::never();
  Time deadline = Time::never();
  SendSnapshot snap;
  FlightState state = FlightState::queued;
  bool duplicate = false;

  bool active() const { return state == FlightState::queued || state == FlightState::sending; }
};

class Scheduler {
 public:
  Scheduler(ChunkPlan plan, std::unique_ptr<Policy> policy);

  // ---- events --------------------------------------------------------------
  LaneId add_lane(const LaneConfig& cfg, Time now);
  /// The lane is gone (socket closed, peer said so): its pieces go back.
  void on_lane_closed(LaneId lane, Time now);
  /// The lane began putting the piece on the wire (the stall clock starts).
  void on_send_started(LaneId lane, PieceId piece, Time now);
  /// The lane's last write of the piece completed (kernel took the bytes).
  /// Only the seed's old rules learn from this.
  void on_written(LaneId lane, PieceId piece, Time now);
  /// The lane's own transport measured this delivery rate from its acks
  /// (a UDP lane's controller, TCP's tcpi_delivery_rate), in file bytes. It
  /// comes per packet rather than per piece, so while pieces still ramp up
  /// it says sooner how much the lane can take (room_rate). Calling it also
  /// says the transport heard acks at `now`: a lane that stalled by the
  /// scheduler's clock yet still delivers is slow (yielding, say), not dead.
  void on_transport_rate(LaneId lane, Rate rate, Time now);
  /// The receiver verified and stored the piece. `recv_duration`: receiver's
  /// time from the piece's first to last byte (zero if unknown).
  AckKind on_ack(LaneId lane, PieceId piece, Time now, Duration recv_duration = Duration::zero());
  /// Fires stall deadlines that have passed.
  void on_timeout(Time now);
  /// Resume: the receiver already holds these ranges (and the engine checked
  /// them against the source); each becomes a delivered piece before the
  /// first Assign. See ChunkPlan::mark_resumed for which ranges are taken;
  /// nothing is taken once a piece was assigned. No lane's stats change.
  std::vector<std::optional<PieceId>> mark_resumed(const std::vector<ByteRange>& ranges);
  /// The transfer grew to `new_total` bytes (ChunkPlan::extend: only whole
  /// chunks before it); the new chunks are handed out behind the old ones,
  /// less the `delivered` ranges (ChunkPlan::extend).
  std::vector<std::optional<PieceId>> extend(Bytes new_total, const std::vector<ByteRange>& delivered = {});

  // ---- actions -------------------------------------------------------------
  std::optional<Action> poll_action(Time now);
  std::optional<Time> poll_timeout() const;
  bool complete() const { return plan_.complete(); }

  // ---- what policies and reports see --------------------------------------
  const ChunkPlan& plan() const { return plan_; }
  const Policy& policy() const { return *policy_; }
  const PolicyRules& rules() const { return rules_; }
  size_t lane_count() const { return lanes_.size(); }
  bool lane_alive(LaneId l) const { return lanes_[l].alive; }
  const std::string& lane_name(LaneId l) const { return lanes_[l].cfg.name; }
  const LaneEstimator& estimator(LaneId l) const { return lanes_[l].est; }
  const LaneStats& stats(LaneId l) const { return lanes_[l].stats; }
  const std::deque<Flight>& flights(LaneId l) const { return lanes_[l].flights; }
  uint32_t active_copies(PieceId p) const { return copies_[p]; }
  uint32_t consecutive_stalls(LaneId l) const { return lanes_[l].consecutive_stalls; }
  Time last_stall(LaneId l) const { return lanes_[l].last_stall; }

  /// The lane's rate for planning: its estimate (the hint until the first ack),
  /// or zero when nothing is known.
  Rate planning_rate(LaneId l) const;
  /// The rate to size a lane's pipeline by: the larger of its estimate and
  /// its transport's latest rate (planning_rate() when there is none).
  Rate room_rate(LaneId l) const;
  /// The transport's latest rate (zero if none) and when it last reported progress.
  Rate transport_rate(LaneId l) const { return lanes_[l].transport_rate; }
  Time transport_heard(LaneId l) const { return lanes_[l].transport_heard; }
  /// Round-trip time for planning: smoothed RTT, its hint, or zero.
  Duration planning_rtt(LaneId l) const;
  /// Bytes handed to the lane and not yet acked (active copies only).
  Bytes outstanding(LaneId l) const;
  size_t active_flights(LaneId l) const;
  /// Bytes the lane still has to put on the wire, by its rate estimate.
  Bytes unsent(LaneId l, Time now) const;
  /// When the lane could start sending a new piece, by its estimate.
  Time free_at(LaneId l, Time now) const;
  /// When a new piece of `len` bytes given to the lane now would be acked.
  Time completion_if_assigned(LaneId l, Bytes len, Time now) const;
  /// When the given active flight would be acked by the estimate: the lane
  /// sends its pieces one after another, each no earlier than it started.
  Time predicted_ack(LaneId l, const Flight& f, Time now) const;
  /// When the given active flight is expected to be acked: predicted_ack,
  /// or, for a piece already past it, as late again as it is now.
  Time expected_completion(LaneId l, const Flight& f, Time now) const;

  // ---- totals --------------------------------------------------------------
  uint32_t total_stalls() const;
  uint32_t total_duplicates() const;
  uint32_t total_abandoned() const;
  Bytes duplicate_bytes() const;

 private:
  struct Lane {
    LaneConfig cfg;
    LaneEstimator est;
    std::deque<Flight> flights;
    LaneStats stats;
    bool alive = true;
    uint32_t consecutive_stalls = 0;
    Time last_stall = Time::never();
    Time last_acked_start;  // latest send start among the lane's acked pieces
    Rate transport_rate;    // on_transport_rate; zero if the lane has none
    Time transport_heard = Time::never();
  };

  Flight* find_flight(LaneId lane, PieceId piece);
  /// When the lane's transmitter is done with `target` (with all its active
  /// flights if null, but never before `now`), by its rate estimate.
  Time projected_tx_end(LaneId l, const Flight* target, Time now) const;
  void apply(const Pick& p, Time now);
  Time deadline_for(LaneId lane, const Flight& f, Time from) const;
  void stall(LaneId lane, Flight& f, Time now);
  /// Drops a copy; the piece returns to the queues if no live copy remains.
  void drop_copy(LaneId lane, Flight& f, Time now, bool emit_cancel);
  void release_piece_if_orphaned(PieceId piece, bool bytes_were_sent);
  void prune(LaneId lane);

  ChunkPlan plan_;
  std::unique_ptr<Policy> policy_;
  PolicyRules rules_;
  std::vector<Lane> lanes_;
  std::vector<uint32_t> copies_;  // active copies per piece
  std::deque<Action> actions_;
};

}  // namespace braid::core
