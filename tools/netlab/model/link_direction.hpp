// One direction of an emulated link, in virtual time:
//
//   arrivals -> [outage?] -> drop-tail queue (+CoDel) -> serialiser at `rate`
//            -> [random loss] -> propagation pipe (delay ± jitter) -> delivery
//
// The caller feeds packets with handle_packet(now), changes settings with
// handle_patch(now), takes delivered packets from poll_delivery(now) and
// sleeps until poll_timeout(). `now` must never go backwards.
//
// Behaviour worth knowing:
// - The serialiser is self-clocked: a packet starts when the previous one
//   finished (or when it arrived, if the link was idle), not when the caller
//   happens to wake up, so the rate stays exact even if wake-ups are late.
// - A packet leaves the queue when its serialisation starts; queue limits and
//   CoDel see only packets still waiting.
// - The queue always admits a packet when it is empty, so a TCP super-packet
//   (GSO) larger than a small byte limit still gets through.
// - Loss is decided per wire packet after serialisation: a lost packet has
//   used link time, as on a radio link. A GSO packet is lost if any of its
//   segments is (the emulator turns GSO off on lossy directions).
// - Jitter is a wandering delay, not per-packet noise: the extra delay moves
//   along straight lines between random points in ±jitter, a new point every
//   4 x jitter. Its slope stays within ±1/2, so packets never overtake each
//   other and the mean delay stays `delay` however dense the traffic
//   (independent per-packet draws without reordering would push every
//   packet of a busy link towards delay + jitter).
// - An outage (dark) drops the queue and everything in flight, and every
//   packet that arrives until it ends: a link that goes dark loses traffic,
//   it does not hold it.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "codel.hpp"
#include "link_params.hpp"
#include "rng.hpp"
#include "units.hpp"

namespace netlab {

/// A packet as the model sees it. `data` is opaque to the model (the
/// emulator keeps the bytes read from TUN there); tests use `tag`.
struct Packet {
  std::uint32_t wire_bytes = 0;    // IP bytes on the wire, all segments' headers included
  std::uint32_t wire_packets = 1;  // segments: 1, or more for a GSO super-packet
  std::uint64_t tag = 0;
  std::vector<std::byte> data;
  TimePoint due{};  // set on delivery: when the model meant it to arrive
};

struct DirectionCounters {
  std::uint64_t rx_packets = 0, rx_bytes = 0;  // offered to the link
  std::uint64_t tx_packets = 0, tx_bytes = 0;  // delivered by it
  std::uint64_t drop_queue = 0;                // drop-tail: the queue was full
  std::uint64_t drop_codel = 0;                // dropped by the AQM
  std::uint64_t drop_loss = 0;                 // random loss
  std::uint64_t drop_outage = 0;               // the link was dark
  std::uint64_t queue_bytes = 0, queue_packets = 0;          // now
  std::uint64_t queue_hwm_bytes = 0, queue_hwm_packets = 0;  // high-water marks
};

class LinkDirection {
 public:
  LinkDirection(DirectionParams params, std::uint64_t seed, std::uint64_t max_packet_bytes = 1500);

  void handle_packet(Packet packet, TimePoint now);
  void handle_patch(const DirectionPatch& patch, TimePoint now);

  /// The next packet whose delivery time has come, if any.
  std::optional<Packet> poll_delivery(TimePoint now);
  /// When poll_delivery() may next return a packet; nothing to do if empty.
  std::optional<TimePoint> poll_timeout() const;

  const DirectionCounters& counters() const { return counters_; }
  const DirectionParams& params() const { return params_; }
  bool dark() const { return dark_; }

 private:
  struct Queued {
    TimePoint enqueued;
    Packet packet;
  };
  struct InFlight {
    TimePoint deliver_at;
    Packet packet;
  };

  void advance(TimePoint now);
  bool admits(const Packet& p) const;
  std::optional<Packet> dequeue_for_transmission(TimePoint start);
  bool lost(const Packet& p);
  Duration delay_at(TimePoint t);
  void go_dark(TimePoint now);

  DirectionParams params_;
  Rng rng_;
  std::uint64_t max_packet_bytes_;
  bool dark_ = false;
  TimePoint last_now_{};

  std::deque<Queued> queue_;
  TimePoint link_free_at_{};  // when the serialiser finishes its current packet
  CodelState codel_;

  std::deque<InFlight> pipe_;
  TimePoint last_delivery_{};

  // The jitter path: a segment from (from_time, from_offset) to (to_time, to_offset).
  struct JitterSegment {
    TimePoint from_time{}, to_time{};
    Duration from_offset{0}, to_offset{0};
  };
  std::optional<JitterSegment> jitter_;
  Duration draw_jitter_offset();

  DirectionCounters counters_;
};

}  // namespace netlab
