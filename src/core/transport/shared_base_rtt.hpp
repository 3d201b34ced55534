// Lanes on one path share its base RTT. A lane that starts while the
// path's other lanes keep a queue standing never sees the empty path itself
// and takes that queue for its base (BBR's latecomer problem); with each
// lane of a path holding a few packets of floor, the queue then never
// empties and every min-RTT window renews the error. In virtual time, four
// `delay` lanes on 4 Mbit/s held ~48 ms of queue this way, one lane ~2 ms
// (transport.SharedBaseRtt.*). With the base shared, every lane sees the
// queue the first lane measured against, and drains it.
//
// Pure: the lanes' controllers call it from their own threads (the engine's
// UDP lanes each have one), hence atomics; time is a parameter.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>

#include "core/units.hpp"

namespace braid::transport {

class SharedBaseRtt {
 public:
  /// A sample older than this is replaced by any newer one (as a lane's own
  /// min-RTT window, BBR's 10 s).
  static constexpr Duration kWindow = Duration::seconds(10);

  /// A lane's RTT sample at `now`.
  void offer(Duration rtt, Time now) {
    const int64_t r = rtt.ns(), t = now.ns();
    int64_t base = base_ns_.load(std::memory_order_relaxed);
    const int64_t stamp = stamp_ns_.load(std::memory_order_relaxed);
    while (r <= base || t > stamp + kWindow.ns()) {
      if (base_ns_.compare_exchange_weak(base, r, std::memory_order_relaxed)) {
        stamp_ns_.store(t, std::memory_order_relaxed);
        return;
      }
    }
  }
  /// The smallest RTT any lane of the path saw within the window; infinite if none.
  Duration base(Time now) const {
    const int64_t stamp = stamp_ns_.load(std::memory_order_relaxed);
    const int64_t base = base_ns_.load(std::memory_order_relaxed);
    if (base == kNone || now.ns() > stamp + kWindow.ns()) return Duration::infinite();
    return Duration::nanos(base);
  }

 private:
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  std::atomic<int64_t> base_ns_{kNone};
  std::atomic<int64_t> stamp_ns_{0};
};

}  // namespace braid::transport
