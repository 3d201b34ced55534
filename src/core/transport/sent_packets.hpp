// The sender's record of packets in flight, indexed by packet number. Packet
// numbers only grow, so this is a ring buffer from the oldest packet not yet
// acked or declared lost up to the newest sent; it grows (rarely, by
// doubling) but does not allocate per packet.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/transport/delivery_rate.hpp"
#include "core/transport/wire.hpp"

namespace braid::transport {

/// Data frames per packet we track (a packet usually carries one range; two
/// when it straddles a piece boundary).
inline constexpr size_t kMaxDataFramesPerPacket = 4;

struct SentPacket {
  enum class State : uint8_t { in_flight, acked, lost };

  uint64_t packet_number = 0;
  Time sent_time;
  uint32_t size = 0;             // on-wire bytes incl. header and AEAD tag
  State state = State::in_flight;
  bool ack_eliciting = false;
  uint8_t data_count = 0;
  std::array<DataRange, kMaxDataFramesPerPacket> data{};
  DeliverySnapshot delivery;
};

class SentPackets {
 public:
  SentPackets();

  /// Appends the next packet; its number must be last_number() + 1 (or any number when empty).
  SentPacket& push(uint64_t packet_number);
  /// The packet with this number, or nullptr if it is older than the window or unsent.
  SentPacket* find(uint64_t packet_number);
  /// Drops acked/lost packets from the front.
  void pop_settled();

  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  uint64_t first_number() const { return first_; }
  SentPacket& at_index(size_t i) { return ring_[(head_ + i) & (ring_.size() - 1)]; }

 private:
  void grow();

  std::vector<SentPacket> ring_;  // size is a power of two
  size_t head_ = 0;
  size_t count_ = 0;
  uint64_t first_ = 0;            // packet number at head_
};

}  // namespace braid::transport
