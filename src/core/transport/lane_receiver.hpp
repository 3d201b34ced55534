// The receiving half of one UDP lane, sans-IO. It records which packet
// numbers arrived (as ranges), hands data frames to the application, and
// produces feedback packets: ACK frames with ranges and the ack delay
// (RFC 9000 §13.2 / §19.3) and MAX_DATA for flow control.
//
// Ack policy (RFC 9000 §13.2.1-2): ack every `ack_every` ack-eliciting
// packets, at once when a packet arrives out of order, and otherwise within
// `max_ack_delay`; the first `quick_acks` packets one by one. MAX_DATA
// rides on every feedback packet (so it is effectively reliable), and a
// window update goes out on its own once the application has consumed a
// quarter of the window since the last one.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "core/transport/range_set.hpp"
#include "core/transport/wire.hpp"

namespace braid::transport {

struct ReceiverConfig {
  uint32_t lane_id = 0;
  Bytes max_datagram_size{1200};
  /// RFC 9000 §13.2.1 recommends acking every second packet; frequent acks
  /// keep the sender's delivery-rate and RTT samples sharp.
  uint32_t ack_every = 2;
  /// Our promise to the sender (SenderConfig::peer_max_ack_delay).
  Duration max_ack_delay = Duration::millis(5);
  /// Flow-control window: data bytes the sender may have beyond what the
  /// application has consumed.
  Bytes receive_window = Bytes::mib(16);
  /// Ranges per ACK frame (RFC 9000 §13.2.4 lets old ranges go).
  size_t max_ack_ranges = 32;
  /// The lane's first packets are acked one by one, at once (Linux TCP's
  /// quick-ack mode at a connection's start does the same). The lanes of a
  /// path send their first flights together, and only the packet that is
  /// first on the link meets an empty queue: acked with the next seven, it
  /// gives no RTT sample, every sample of the start stands behind the
  /// flights, and the path's base is read that much too high — for the
  /// whole min-RTT window, hiding a standing queue from the water mark.
  uint32_t quick_acks = 16;
};

/// The application side: gets each DATA frame as it arrives (possibly twice
/// if a retransmission crossed a late original; writes must be idempotent).
class DataSink {
 public:
  virtual ~DataSink() = default;
  virtual void on_data(const DataRange& range, std::span<const uint8_t> payload) = 0;
};

struct ReceiverStats {
  uint64_t packets_received = 0;
  uint64_t duplicate_packets = 0;
  uint64_t data_bytes_received = 0;  // including duplicates
  uint64_t feedback_packets_sent = 0;
};

class LaneReceiver {
 public:
  explicit LaneReceiver(const ReceiverConfig& cfg);

  /// A data packet from the sender (plaintext, after opening and the replay
  /// check). Duplicates are ignored and reported as duplicate_packet.
  TransportError on_datagram_received(Time now, std::span<const uint8_t> packet, DataSink& sink);
  /// The application has processed `n` more data bytes: the window slides.
  void on_data_consumed(Bytes n);
  /// Nothing to do here beyond what poll_transmit checks; kept for the
  /// uniform driver loop.
  void on_timeout(Time now) { (void)now; }
  /// A feedback packet if one is due now, written into `out`
  /// (size ≥ max_datagram_size); its size excludes the AEAD tag.
  std::optional<size_t> poll_transmit(Time now, std::span<uint8_t> out);
  /// When the delayed ack is due (Time::never() if nothing to ack).
  Time poll_timeout() const;

  const ReceiverStats& stats() const { return stats_; }
  const RangeSet& received() const { return received_; }
  Bytes max_data() const { return Bytes(consumed_ + cfg_.receive_window.count()); }

 private:
  ReceiverConfig cfg_;
  RangeSet received_;
  ReceiverStats stats_;
  uint64_t next_packet_number_ = 0;   // our own (feedback) packet numbers
  uint32_t unacked_eliciting_ = 0;
  bool ack_now_ = false;
  Time ack_deadline_ = Time::never();
  Time largest_received_time_;
  uint64_t consumed_ = 0;
  uint64_t advertised_max_data_ = 0;
};

}  // namespace braid::transport
