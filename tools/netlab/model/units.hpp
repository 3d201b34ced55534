// Units of the link model: virtual time points, durations and bit rates.
// The model never reads a clock; the emulator converts CLOCK_MONOTONIC into
// ModelTime and passes it in, and tests pass whatever time they like.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>

namespace netlab {

using Duration = std::chrono::nanoseconds;

/// A clock that exists only as a type: it has no now(). Time points of this
/// clock count from the emulator's start (t = 0).
struct ModelClock {
  using rep = Duration::rep;
  using period = Duration::period;
  using duration = Duration;
  using time_point = std::chrono::time_point<ModelClock, Duration>;
  static constexpr bool is_steady = true;
};
using TimePoint = ModelClock::time_point;

inline constexpr TimePoint at(Duration since_start) { return TimePoint{since_start}; }

/// A link rate in bits per second, counted over whole IP packets (headers
/// included). Zero means "unlimited": packets take no time to serialise.
class BitRate {
 public:
  constexpr BitRate() = default;
  static constexpr BitRate bits_per_second(std::uint64_t bps) { return BitRate{bps}; }
  static constexpr BitRate unlimited() { return BitRate{}; }

  constexpr bool is_unlimited() const { return bps_ == 0; }
  constexpr std::uint64_t bps() const { return bps_; }

  /// Time to put `bytes` on the wire, rounded up to the next nanosecond so
  /// a link never runs faster than its setting. Exact for packets below 2 GB.
  constexpr Duration transfer_time(std::uint64_t bytes) const {
    if (is_unlimited()) return Duration{0};
    const std::uint64_t bit_ns = bytes * 8u * 1'000'000'000u;
    return Duration{static_cast<Duration::rep>((bit_ns + bps_ - 1) / bps_)};
  }

  /// Bytes this rate carries in `d` (rounded down); max() when unlimited.
  constexpr std::uint64_t bytes_in(Duration d) const {
    if (is_unlimited()) return std::numeric_limits<std::uint64_t>::max();
    const long double bytes = static_cast<long double>(bps_) / 8.0L *
                              static_cast<long double>(d.count()) / 1e9L;
    return static_cast<std::uint64_t>(bytes);
  }

  friend constexpr bool operator==(BitRate, BitRate) = default;

 private:
  constexpr explicit BitRate(std::uint64_t bps) : bps_(bps) {}
  std::uint64_t bps_ = 0;
};

}  // namespace netlab
