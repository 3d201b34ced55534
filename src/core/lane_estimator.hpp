// What one lane can deliver: its delivery rate and round-trip time, learned
// from the receiver's acks only (MISSION.md §1: socket-write completions say
// when the kernel took the bytes, not when the peer got them).
//
// Rate samples follow BBR's delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation):
// each piece remembers, when the lane starts sending it, how much the lane had
// delivered and when; its ack yields (bytes delivered since) / (time since),
// taking the longer of the send and ack intervals. Intervals shorter than
// kMinSampleInterval are discarded, never divided by (the seed once divided by 1 µs).
//
// A sample taken while the lane was idle (nothing in flight, so the interval
// contains an idle round trip) is "app-limited": it may raise the estimate but
// never lower it, except the first sample of all, which always replaces the hint.
#pragma once

#include <array>
#include <optional>

#include "core/units.hpp"

namespace braid::core {

struct EstimatorConfig {
  /// Shortest ack interval a rate sample may span. 200 µs is one 1 MiB piece
  /// at 5 GB/s, faster than any lane this machine can drive.
  Duration min_sample_interval = Duration::micros(200);
  /// Samples the median is taken over: a 10x step is followed after two samples,
  /// one outlier is ignored.
  int window = 3;
  /// Whether an ack that arrives after its piece stalled still teaches the
  /// estimate (true for every policy except the seed's old rules).
  bool learn_from_late_acks = true;
};

/// The lane state a piece remembers when the lane starts sending it.
struct SendSnapshot {
  Bytes delivered;      // lane's delivered bytes at send time
  Time delivered_time;  // when that count was last updated
  Time first_sent_time; // send time of the piece acked last
  Time sent_time;       // when this piece started sending
  bool app_limited = false;
};

struct RateSample {
  Rate rate;
  Duration interval;
  bool app_limited = false;
};

class LaneEstimator {
 public:
  explicit LaneEstimator(EstimatorConfig cfg = {}, std::optional<Rate> hint = std::nullopt);

  /// Call when the lane starts sending a piece. `lane_idle` means the lane had
  /// nothing in flight, so the clock of the delivered count restarts now.
  SendSnapshot on_send(Time now, bool lane_idle);

  /// Call for every ack of a piece this lane carried. `recv_duration` is the
  /// receiver's time from the piece's first byte to its last (zero if unknown).
  /// `late` marks an ack of a piece that had already stalled.
  /// Returns the sample taken, if any.
  std::optional<RateSample> on_ack(Bytes bytes, const SendSnapshot& snap, Time now,
                                   Duration recv_duration, bool late);

  /// The lane failed to deliver `bytes` within `elapsed`: its rate is below
  /// bytes/elapsed, so the estimate drops to half of that (if not lower already).
  /// A late ack of that piece may restore it (see on_ack).
  void on_stall(Bytes bytes, Duration elapsed);

  /// Seeds or replaces the estimate from outside (used by the seed's old rules,
  /// which learn from write completions).
  void force_rate(Rate r);

  /// Current delivery-rate estimate; the hint until the first ack, zero if neither.
  Rate rate() const { return estimate_; }
  bool measured() const { return samples_taken_ > 0; }
  bool has_rate() const { return estimate_.bytes_per_second() > 0; }
  /// Smoothed RTT (RFC 6298 gains); the hint or zero until the first sample.
  Duration srtt() const { return srtt_; }
  Duration min_rtt() const { return min_rtt_; }
  Bytes delivered() const { return delivered_; }
  int samples() const { return samples_taken_; }
  /// How far the rate samples stray from the estimate, as a fraction of it:
  /// the mean deviation (RFC 6298's RTTVAR gains), starting at
  /// kFirstDeviation with the first sample — one sample says nothing of its
  /// spread — and shrinking as samples agree. For planning margins.
  double relative_deviation() const { return deviation_; }
  static constexpr double kFirstDeviation = 0.5;

  void set_rtt_hint(Duration rtt) {
    if (rtt_samples_ == 0) srtt_ = min_rtt_ = rtt;
  }

 private:
  void accept(Rate r);
  void update_rtt(Duration sample);

  EstimatorConfig cfg_;
  Rate estimate_;
  std::array<Rate, 8> window_{};
  int window_len_ = 0;
  int window_pos_ = 0;
  int samples_taken_ = 0;

  Bytes delivered_;
  Time delivered_time_;
  Time first_sent_time_;

  double deviation_ = kFirstDeviation;
  Rate before_stall_;  // the estimate a stall lowered, for a late ack to restore

  Duration srtt_;
  Duration min_rtt_;
  int rtt_samples_ = 0;
};

}  // namespace braid::core
