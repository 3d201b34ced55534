// A simulated bottleneck, pure and in virtual time: a FIFO drop-tail queue
// (limit in bytes) drained at `rate`, then `one_way_delay` of propagation,
// with seeded random loss at the entrance (like netem in front of a shaper).
// Packets carry their bytes, so the real lane code runs over it unchanged.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "core/units.hpp"

namespace braid::transport::sim {

struct LinkConfig {
  Rate rate = Rate::mbit(50);
  Duration one_way_delay = Duration::millis(10);
  Bytes queue_limit = Bytes::mib(2);
  double loss = 0.0;  // probability a packet is dropped at the entrance
  uint64_t seed = 1;
  /// The link stops serialising for `pause_for` at the start of every
  /// `pause_every` (zero: never): a queue that comes and goes, as a Wi-Fi
  /// link's busy medium or a host that runs a link emulator late makes.
  Duration pause_every = Duration::zero();
  Duration pause_for = Duration::zero();
  /// Each packet reaches the far end up to this much later (uniform, order
  /// kept): the few milliseconds a busy host adds to a path's RTT samples
  /// above their minimum.
  Duration jitter = Duration::zero();
};

struct SimPacket {
  int flow = 0;                  // who receives it
  uint32_t size = 0;             // on-wire bytes
  std::vector<uint8_t> bytes;    // contents (may be empty for synthetic traffic)
};

struct LinkStats {
  uint64_t packets_in = 0;
  uint64_t dropped_random = 0;
  uint64_t dropped_queue = 0;
  uint64_t bytes_dropped = 0;
  uint64_t bytes_delivered = 0;
};

class BottleneckLink {
 public:
  explicit BottleneckLink(const LinkConfig& cfg);

  /// Offers a packet at `now`; false if it was dropped (random loss or full queue).
  bool send(Time now, SimPacket&& packet);
  /// When the next packet reaches the far end (Time::never() if none).
  Time next_arrival() const;
  /// The next packet that has arrived by `now`, if any.
  std::optional<SimPacket> receive(Time now);

  /// Bytes waiting or being serialised at `now`.
  Bytes queued_bytes(Time now);
  /// Extra delay a packet (a ping) entering now would see: queue / rate.
  Duration queue_delay(Time now);

  const LinkStats& stats() const { return stats_; }
  const LinkConfig& config() const { return cfg_; }
  /// Bytes dropped per flow (for "resent ≤ 1.2 × lost" checks).
  uint64_t bytes_dropped_for(int flow) const;

 private:
  double uniform();
  void expire_queue(Time now);
  /// `t`, or the end of the pause it falls in.
  Time after_pause(Time t) const;

  struct Departure {
    Time finish;
    uint32_t size;
  };
  struct InFlight {
    Time arrival;
    SimPacket packet;
  };

  LinkConfig cfg_;
  uint64_t rng_;
  std::deque<Departure> queue_;   // packets not yet fully serialised
  uint64_t queued_ = 0;
  Time last_finish_ = Time::zero();
  Time last_arrival_ = Time::zero();
  std::deque<InFlight> wire_;
  LinkStats stats_;
  std::vector<uint64_t> dropped_by_flow_;
};

}  // namespace braid::transport::sim
