// One simulated lane: a FIFO transmitter at the lane's rate (optionally
// varied per piece: noise), a propagation delay of RTT/2 (plus jitter) each
// way, optional piece and ack loss, a socket send buffer (for
// write-completion times), outages and rate changes; the receiver's timing
// of a piece may see it only frame by frame (frame=).
// Bytes on the wire during an outage are held and arrive after it, as TCP
// would retransmit them; a lane gone for good loses everything.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "core/chunk_plan.hpp"
#include "core/units.hpp"
#include "sim/rng.hpp"
#include "sim/scenario.hpp"

namespace braid::sim {

class SimLane {
 public:
  SimLane(const LaneSpec& spec, uint64_t seed);

  struct Started {
    core::PieceId piece;
  };
  struct Written {
    core::PieceId piece;
    Time at;
  };
  /// A piece finished transmitting: it reaches the receiver at `arrival`
  /// (unless lost) after spending `recv_duration` arriving.
  struct Transmitted {
    core::PieceId piece;
    Time arrival;
    Duration recv_duration;
    bool lost;
  };

  /// Queues a piece. Returns the pieces whose transmission started now.
  std::optional<Started> enqueue(core::PieceId piece, Bytes length, Time now, std::vector<Written>& written);
  /// Drops a piece that has not finished transmitting. If it was on the wire,
  /// the next queued piece starts now and is returned.
  std::optional<Started> cancel(core::PieceId piece, Time now);

  /// When the current transmission ends, if one is running.
  std::optional<Time> next_tx_done() const;
  /// Completes the current transmission (call at next_tx_done()); may start the next.
  Transmitted finish_tx(Time now, std::optional<Started>& next_started, std::vector<Written>& written);

  /// One-way delay for a packet leaving now (propagation + jitter), kept in FIFO order.
  Time arrival_time(Time leaves, bool forward);
  bool ack_lost();

  void set_rate(Rate r, Time now);
  void set_down(Time now);
  std::optional<Started> set_up(Time now);
  void set_gone(Time now);

  /// What the lane's transport would report from its acks right now: the
  /// rate its window carries. Zero for lanes without a transport model (iw).
  Rate transport_rate() const;
  bool up() const { return up_ && !gone_; }
  bool gone() const { return gone_; }
  Time up_since() const { return up_since_; }
  Duration one_way() const { return one_way_; }
  Bytes wasted_bytes() const { return wasted_; }
  Bytes wire_bytes() const { return wire_; }

 private:
  struct Queued {
    core::PieceId piece;
    Bytes length;
    Bytes sent;  // of the head piece only
    bool written;
  };
  void advance(Time now);  // account bytes sent by the head piece up to now
  /// Bytes the lane moves in `dt` of transmitting, growing its window (slow start).
  Bytes transmit_for(Duration dt);
  /// Time the lane needs to move `bytes` from its current window.
  Duration time_for(Bytes bytes) const;
  double bdp() const;
  /// The rate the head piece is sent at: the lane's, times this piece's noise.
  Rate cur_rate() const { return rate_ * factor_; }
  std::optional<Started> start_head(Time now);
  void update_writes(Time now, std::vector<Written>& written);

  LaneSpec spec_;
  Rng rng_;
  Rate rate_;
  Duration one_way_;
  std::deque<Queued> queue_;
  bool transmitting_ = false;
  Time tx_started_;      // when the head piece began
  Time last_advance_;
  bool up_ = true;
  bool gone_ = false;
  Time up_since_;
  Time last_arrival_fwd_, last_arrival_back_;
  Bytes wasted_, wire_;
  double window_;  // bytes per RTT while in slow start (≥ bdp(): full rate)
  double factor_ = 1.0;  // rate noise of the piece on the wire (LaneSpec::rate_noise)
};

}  // namespace braid::sim
