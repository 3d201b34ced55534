// How a lane's I/O thread sleeps: until its socket is readable (or writable,
// when a send hit a full buffer), another thread wakes it (an eventfd), or
// the transport core's next deadline (poll_timeout) — whichever is first.
//
// The deadline uses ppoll(2)'s nanosecond timeout, an hrtimer like timerfd's
// and clock_nanosleep's, and the thread's timer slack is set to 1 ns
// (PR_SET_TIMERSLACK; the default 50 µs would blur pacing): the pacer hands
// out sub-millisecond gaps and its token bucket absorbs the few-µs wake-up
// latency, so a late wake sends a little burst, never a lower rate.
#pragma once

#include <chrono>
#include <cstdint>

#include "core/units.hpp"
#include "engine/security/unique_fd.h"

namespace braid::udp {

/// The lane's clock: the core's Time, read from CLOCK_MONOTONIC (steady_clock).
class LaneClock {
 public:
  Time now() const {
    return Time::from_ns(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - epoch_).count());
  }

 private:
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();
};

class IoWaiter {
 public:
  IoWaiter();
  bool valid() const { return wake_fd_.valid(); }

  /// Any thread: makes the current or next wait() return at once.
  void wake();
  /// The I/O thread: call once on it (timer slack is per thread).
  static void tune_thread();
  /// CPU time the calling thread has used, in seconds.
  static double thread_cpu_seconds();
  /// Sleeps until `socket_fd` is readable (or writable if `want_write`),
  /// wake() was called, or `deadline` on `clock` (Time::never(): no deadline).
  void wait(int socket_fd, bool want_write, Time deadline, const LaneClock& clock);

 private:
  security::UniqueFd wake_fd_;
};

}  // namespace braid::udp
