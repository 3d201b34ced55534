// What braid's delay-based controllers share: the UDP lanes' `background`
// controller (background_controller.hpp, a window) and the TCP lanes'
// coupled pacing cap (tcp_group_cap.hpp, a rate over the kernel's own
// controller; a scavenger under --background). They follow
// LEDBAT (RFC 6817) with the faster reactions of LEDBAT++
// (draft-irtf-iccrg-ledbat-plus-plus): they steer the queueing delay they
// see — current RTT minus base RTT — towards a small target.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/units.hpp"

namespace braid::transport::ledbat {

// RFC 6817 §3.3: GAIN = 1 (at most one packet per RTT of additive increase).
inline constexpr double kGain = 1.0;
// RFC 6817 §3.3: MIN_CWND = 2 packets.
inline constexpr uint64_t kMinPackets = 2;
// LEDBAT++ §4.3: a multiplicative decrease removes at most half per RTT.
inline constexpr double kMaxDecreasePerRtt = 0.5;
// LEDBAT++ §4.2: slow start ends once delay reaches 3/4 of the target.
inline constexpr double kSlowStartExit = 0.75;
// Our choice: a queue below a quarter of the target for 8 RTTs while the
// sender is under 1/8 of its largest size means the competing traffic has
// left, so growing at one packet per RTT would waste the link: slow start
// again. (Near the largest size with an empty queue is just "full link, no
// queue" — slow-starting from there overshoots, so that case grows additively.)
inline constexpr double kQuietFraction = 0.25;
inline constexpr double kQuietRtts = 8;
inline constexpr double kRestartBelowMaxFraction = 1.0 / 8;
// Our choice: while the queue stays below kQuietFraction of the target the
// sender may also grow multiplicatively, up to this much per RTT, fading to
// LEDBAT's additive step as the queue nears that fraction. RFC 6817's one
// packet per RTT needs seconds to refill a 100 Mbit/s path after the other
// traffic leaves (a 20 ms BDP is ~170 packets); the delay signal, not the
// step size, is what keeps a scavenger out of the way.
inline constexpr double kQuietGrowthPerRtt = 0.5;

/// Queueing delay = current delay − base delay (RFC 6817 §3.4.2): the base
/// is the minimum over 10 one-minute buckets (BASE_HISTORY), the current
/// delay the minimum of the last 4 samples (CURRENT_FILTER).
class DelayFilter {
 public:
  /// `current_filter`: how many recent samples the current delay is the
  /// minimum of (RFC 6817 suggests 4 per-ack samples; a source whose samples
  /// are already smoothed, or come seldom, wants fewer), 1 to kMaxCurrentFilter.
  explicit DelayFilter(size_t current_filter = 4);

  /// One RTT sample (one-way delays would do as well; only differences count).
  void on_sample(Time now, Duration sample);
  bool has_sample() const { return recent_count_ > 0; }
  /// Current minus base delay; zero before the first sample.
  Duration queuing_delay() const { return queuing_delay_; }
  Duration base() const;

 private:
  static constexpr size_t kBaseHistory = 10;
  static constexpr size_t kMaxCurrentFilter = 8;
  size_t current_filter_;
  std::array<Duration, kBaseHistory> base_minutes_;
  int64_t current_minute_ = -1;
  size_t base_index_ = 0;
  std::array<Duration, kMaxCurrentFilter> recent_;
  size_t recent_count_ = 0;
  size_t recent_index_ = 0;
  Duration queuing_delay_;
};

}  // namespace braid::transport::ledbat
