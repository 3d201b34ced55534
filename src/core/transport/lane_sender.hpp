// The sending half of one UDP lane, sans-IO (the quinn-proto shape): feed it
// events with `now`, drain what it wants to do with poll_*.
//
//   driver loop:  on_datagram_received(now, feedback packet)   // acks, MAX_DATA
//                 on_timeout(now) when now >= poll_timeout()
//                 while (auto t = poll_transmit(now, buf)) { fill payloads, seal, send }
//                 sleep until poll_timeout()
//
// Reliability follows RFC 9002: packet numbers are never reused; loss is
// declared by packet threshold (3) or time threshold (9/8 RTT); a probe
// timeout (PTO) recovers tail losses; only the lost data ranges are sent
// again, in new packets. Flow control: new data never exceeds the receiver's
// MAX_DATA. Congestion control and pacing come from a PacedController.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/transport/cc_registry.hpp"
#include "core/transport/delivery_rate.hpp"
#include "core/transport/pacer.hpp"
#include "core/transport/rtt_estimator.hpp"
#include "core/transport/sent_packets.hpp"
#include "core/transport/wire.hpp"

namespace braid::transport {

struct SenderConfig {
  uint32_t lane_id = 0;
  /// Whole UDP payload: header + frames + AEAD tag (1200..9000, MISSION §2).
  Bytes max_datagram_size{1200};
  ControllerConfig cc;
  PacerConfig pacer;
  /// The receiver's promise of how long it may hold an ack (RFC 9002 §6.2.1);
  /// must match ReceiverConfig::max_ack_delay.
  Duration peer_max_ack_delay = Duration::millis(5);
  /// Flow-control credit before the first MAX_DATA (ReceiverConfig::receive_window).
  Bytes initial_max_data = Bytes::mib(16);
};

struct SenderStats {
  uint64_t packets_sent = 0;
  uint64_t packets_acked = 0;
  uint64_t packets_lost = 0;
  uint64_t pto_count = 0;             // probe timeouts that fired
  uint64_t bytes_sent = 0;            // on-wire bytes incl. header and tag
  uint64_t bytes_lost = 0;            // on-wire bytes of packets declared lost
  uint64_t data_bytes_sent = 0;       // new data bytes (first transmission)
  uint64_t data_bytes_retransmitted = 0;  // data bytes sent again (loss or probe)
  uint64_t data_bytes_acked = 0;      // data bytes in acked packets
  uint64_t stale_acks = 0;            // ack frames that acknowledged nothing new
};

/// Where the engine must write the payload of one DATA frame.
struct PayloadSlot {
  DataRange range;
  size_t offset_in_packet = 0;  // payload bytes go at packet[offset, offset + range.length)
};

/// One packet ready to seal: `size` bytes written at the start of the caller's
/// buffer (header + frames, payload bytes still to be filled); the sealer
/// appends kAeadTagSize bytes after them.
struct Transmit {
  size_t size = 0;
  uint64_t packet_number = 0;
  bool is_probe = false;
  uint8_t payload_count = 0;
  std::array<PayloadSlot, kMaxDataFramesPerPacket> payloads{};
};

class LaneSender {
 public:
  LaneSender(const SenderConfig& cfg, std::unique_ptr<CongestionController> cc);
  /// Builds a sender with controller `cc_id` from the registry; nullptr if unknown.
  static std::unique_ptr<LaneSender> create(const SenderConfig& cfg, std::string_view cc_id);

  /// Queues application data (a range of a piece) to be sent once.
  void enqueue(const DataRange& range);
  /// New data queued and not yet sent.
  Bytes queued_bytes() const { return Bytes(queued_bytes_); }
  /// True when every byte enqueued has been acknowledged.
  bool all_acked() const;
  /// Forgets every not-yet-acknowledged byte of `piece`: queued, waiting to be
  /// resent, or riding in packets in flight (those still count as in flight,
  /// but their data is never resent nor reported in acked_data()). After this
  /// no Transmit names the piece again, so its bytes may be released.
  void cancel_piece(uint64_t piece);
  /// Data ranges newly acknowledged by the last on_datagram_received. Every
  /// byte enqueued is reported exactly once (a lost packet's data counts when
  /// its resend is acked), so the engine can tell when a piece is complete.
  std::span<const DataRange> acked_data() const { return acked_data_; }

  /// A feedback packet from the receiver (plaintext, after opening).
  TransportError on_datagram_received(Time now, std::span<const uint8_t> packet);
  /// Fires loss and probe timers that are due.
  void on_timeout(Time now);
  /// The next packet to send now, written into `out` (size ≥ max_datagram_size),
  /// or nothing if pacing, the window, flow control or lack of data say wait.
  std::optional<Transmit> poll_transmit(Time now, std::span<uint8_t> out);
  /// Earliest time something changes without input: a loss/probe timer or the
  /// pacer allowing the next packet. Time::never() if idle.
  Time poll_timeout() const;

  const SenderStats& stats() const { return stats_; }
  const RttEstimator& rtt() const { return rtt_; }
  const PacedController& controller() const { return cc_; }
  Bytes bytes_in_flight() const { return Bytes(in_flight_); }
  Bytes max_data() const { return Bytes(max_data_); }
  uint32_t lane_id() const { return cfg_.lane_id; }

 private:
  TransportError on_ack(Time now, const AckFrame& ack);
  void detect_lost(Time now);
  void notify_controller(Time now, uint64_t prior_in_flight, bool rtt_updated);
  Time loss_detection_deadline() const;
  bool has_data_to_send() const;
  bool fill_data(ByteWriter& w, Transmit& t, SentPacket& p, bool probe);
  bool fill_probe_copy(ByteWriter& w, Transmit& t, SentPacket& p);
  bool add_data_frame(ByteWriter& w, Transmit& t, SentPacket& p, DataRange& range, bool retransmit);

  SenderConfig cfg_;
  PacedController cc_;
  RttEstimator rtt_;
  DeliveryRateSampler sampler_;
  SentPackets sent_;
  SenderStats stats_;

  std::deque<DataRange> queue_;       // new data, in order
  std::deque<DataRange> retransmit_;  // data from lost packets, sent first
  uint64_t queued_bytes_ = 0;

  uint64_t next_packet_number_ = 0;
  uint64_t largest_acked_ = 0;
  bool any_acked_ = false;
  uint64_t in_flight_ = 0;            // bytes
  uint64_t max_data_;                 // flow-control limit on new data bytes
  uint64_t new_data_sent_ = 0;

  Time loss_time_ = Time::never();
  Time last_ack_eliciting_sent_ = Time::never();
  uint32_t pto_backoff_ = 0;          // RFC 9002 pto_count: consecutive PTOs
  uint32_t probes_pending_ = 0;
  uint64_t probe_cursor_ = 0;         // next in-flight packet a data-less probe copies
  Time last_poll_;                    // pacer reference for poll_timeout()

  // Scratch for one ack, reserved once.
  std::vector<AckedPacket> acked_;
  std::vector<LostPacket> lost_;
  std::vector<DataRange> acked_data_;
};

}  // namespace braid::transport
