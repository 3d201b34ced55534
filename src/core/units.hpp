// Strong units for the pure core: time points, durations, byte counts and rates.
// Mixing bytes with bits or microseconds with milliseconds fails to compile.
// Time is injected by the caller (simulator or engine); the core never reads a clock.
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <limits>

namespace braid {

/// A span of time with nanosecond resolution.
class Duration {
 public:
  constexpr Duration() = default;
  static constexpr Duration nanos(int64_t n) { return Duration(n); }
  static constexpr Duration micros(int64_t n) { return Duration(n * 1000); }
  static constexpr Duration millis(int64_t n) { return Duration(n * 1000000); }
  static constexpr Duration seconds_f(double s) { return Duration(static_cast<int64_t>(s * 1e9)); }
  static constexpr Duration seconds(int64_t s) { return Duration(s * 1000000000); }
  static constexpr Duration zero() { return Duration(0); }
  static constexpr Duration infinite() { return Duration(std::numeric_limits<int64_t>::max() / 4); }

  constexpr int64_t ns() const { return ns_; }
  constexpr double to_seconds() const { return static_cast<double>(ns_) * 1e-9; }
  constexpr double to_millis() const { return static_cast<double>(ns_) * 1e-6; }

  constexpr Duration operator+(Duration o) const { return Duration(ns_ + o.ns_); }
  constexpr Duration operator-(Duration o) const { return Duration(ns_ - o.ns_); }
  constexpr Duration operator*(double k) const { return Duration(static_cast<int64_t>(static_cast<double>(ns_) * k)); }
  constexpr Duration operator/(double k) const { return Duration(static_cast<int64_t>(static_cast<double>(ns_) / k)); }
  constexpr Duration& operator+=(Duration o) { ns_ += o.ns_; return *this; }
  constexpr Duration& operator-=(Duration o) { ns_ -= o.ns_; return *this; }
  constexpr auto operator<=>(const Duration&) const = default;

 private:
  constexpr explicit Duration(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

/// A point in time on the caller's monotonic clock (the simulator starts at zero).
class Time {
 public:
  constexpr Time() = default;
  static constexpr Time from_ns(int64_t ns) { return Time(ns); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time never() { return Time(std::numeric_limits<int64_t>::max() / 2); }

  constexpr int64_t ns() const { return ns_; }
  constexpr double to_seconds() const { return static_cast<double>(ns_) * 1e-9; }

  constexpr Time operator+(Duration d) const { return Time(ns_ + d.ns()); }
  constexpr Time operator-(Duration d) const { return Time(ns_ - d.ns()); }
  constexpr Duration operator-(Time o) const { return Duration::nanos(ns_ - o.ns_); }
  constexpr Time& operator+=(Duration d) { ns_ += d.ns(); return *this; }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

/// A count of bytes.
class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(uint64_t n) : n_(n) {}
  static constexpr Bytes kib(uint64_t n) { return Bytes(n << 10); }
  static constexpr Bytes mib(uint64_t n) { return Bytes(n << 20); }
  static constexpr Bytes gib(uint64_t n) { return Bytes(n << 30); }

  constexpr uint64_t count() const { return n_; }
  constexpr double as_double() const { return static_cast<double>(n_); }

  constexpr Bytes operator+(Bytes o) const { return Bytes(n_ + o.n_); }
  /// Saturates at zero: a byte count never goes negative.
  constexpr Bytes operator-(Bytes o) const { return Bytes(n_ > o.n_ ? n_ - o.n_ : 0); }
  constexpr Bytes& operator+=(Bytes o) { n_ += o.n_; return *this; }
  constexpr Bytes& operator-=(Bytes o) { n_ = n_ > o.n_ ? n_ - o.n_ : 0; return *this; }
  constexpr auto operator<=>(const Bytes&) const = default;

 private:
  uint64_t n_ = 0;
};

/// A data rate, stored as bytes per second.
class Rate {
 public:
  constexpr Rate() = default;
  static constexpr Rate bytes_per_sec(double b) { return Rate(b); }
  static constexpr Rate bits_per_sec(double b) { return Rate(b / 8.0); }
  static constexpr Rate mbit(double m) { return Rate(m * 1e6 / 8.0); }
  static constexpr Rate zero() { return Rate(0); }
  /// Bytes over an interval; a non-positive interval yields zero, never infinity.
  static constexpr Rate over(Bytes b, Duration d) {
    return d.ns() > 0 ? Rate(b.as_double() / d.to_seconds()) : Rate(0);
  }

  constexpr double bytes_per_second() const { return bps_; }
  constexpr double bits_per_second() const { return bps_ * 8.0; }
  constexpr bool is_zero() const { return bps_ <= 0; }

  /// Time to move `b` at this rate; infinite at rate zero.
  constexpr Duration transfer_time(Bytes b) const {
    return bps_ > 0 ? Duration::seconds_f(b.as_double() / bps_) : Duration::infinite();
  }
  /// Bytes moved in `d` at this rate.
  constexpr Bytes bytes_in(Duration d) const {
    return d.ns() > 0 ? Bytes(static_cast<uint64_t>(bps_ * d.to_seconds())) : Bytes(0);
  }

  constexpr Rate operator+(Rate o) const { return Rate(bps_ + o.bps_); }
  constexpr Rate operator*(double k) const { return Rate(bps_ * k); }
  constexpr auto operator<=>(const Rate&) const = default;

 private:
  constexpr explicit Rate(double bps) : bps_(bps) {}
  double bps_ = 0;
};

}  // namespace braid
