// What a link does to packets, per direction, and the changes that timed
// events make to it. Plain data; the parser fills it, the model reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "units.hpp"

namespace netlab {

/// Drop-tail limit of the bottleneck queue, in one of three units. A time
/// limit is converted to bytes at the rate in force when a packet arrives,
/// so it follows rate changes ("hold at most 100 ms of traffic").
struct QueueLimit {
  enum class Unit { packets, bytes, time };
  Unit unit = Unit::packets;
  std::uint64_t amount = 1000;  // packets or bytes; unused for time
  Duration time{0};

  static QueueLimit packets(std::uint64_t n) { return {Unit::packets, n, {}}; }
  static QueueLimit bytes(std::uint64_t n) { return {Unit::bytes, n, {}}; }
  static QueueLimit duration(Duration d) { return {Unit::time, 0, d}; }
  friend bool operator==(const QueueLimit&, const QueueLimit&) = default;
};

/// CoDel AQM on the bottleneck queue (RFC 8289; its section 4.2-4.3 give
/// 5 ms target and 100 ms interval as the defaults for the Internet).
struct CodelParams {
  bool enabled = false;
  Duration target = std::chrono::milliseconds(5);
  Duration interval = std::chrono::milliseconds(100);
  friend bool operator==(const CodelParams&, const CodelParams&) = default;
};

/// The model of one direction of a link.
struct DirectionParams {
  BitRate rate;                         // unlimited by default
  Duration delay{0};                    // one-way propagation delay
  Duration jitter{0};                   // delay varies uniformly in ±jitter
  double loss = 0.0;                    // probability per wire packet, 0..1
  QueueLimit queue = QueueLimit::packets(1000);  // like Linux's txqueuelen
  CodelParams codel;
  friend bool operator==(const DirectionParams&, const DirectionParams&) = default;
};

/// A partial update of DirectionParams: only the fields that are set change.
/// `dark` starts (true) or ends (false) an outage.
struct DirectionPatch {
  std::optional<BitRate> rate;
  std::optional<Duration> delay;
  std::optional<Duration> jitter;
  std::optional<double> loss;
  std::optional<QueueLimit> queue;
  std::optional<bool> codel;
  std::optional<Duration> codel_target;
  std::optional<Duration> codel_interval;
  std::optional<bool> dark;

  bool empty() const {
    return !rate && !delay && !jitter && !loss && !queue && !codel && !codel_target &&
           !codel_interval && !dark;
  }
  void apply_to(DirectionParams& p) const {
    if (rate) p.rate = *rate;
    if (delay) p.delay = *delay;
    if (jitter) p.jitter = *jitter;
    if (loss) p.loss = *loss;
    if (queue) p.queue = *queue;
    if (codel) p.codel.enabled = *codel;
    if (codel_target) p.codel.target = *codel_target;
    if (codel_interval) p.codel.interval = *codel_interval;
  }
};

/// One emulated link: its name, and a model per direction. "up" carries
/// packets from the sender namespace to the receiver namespace, "down" the
/// other way (ACKs, for a bulk transfer).
struct LinkSpec {
  std::string name;
  DirectionParams up;
  DirectionParams down;
  unsigned mtu = 1500;
  bool gso = true;       // let the kernel hand over TCP super-packets
  std::uint64_t seed = 0;  // 0: derive from the emulator's seed and link index
};

/// A change to one link (or all, when link == "*") at a time relative to the
/// moment the event was given to the emulator.
struct LinkEvent {
  Duration at{0};
  std::string link;
  DirectionPatch up;
  DirectionPatch down;
};

}  // namespace netlab
