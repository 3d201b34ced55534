#include "core/transport/sent_packets.hpp"

namespace braid::transport {

SentPackets::SentPackets() : ring_(1024) {}

SentPacket& SentPackets::push(uint64_t packet_number) {
  if (count_ == 0) {
    first_ = packet_number;
    head_ = 0;
  }
  if (count_ == ring_.size()) grow();
  SentPacket& p = ring_[(head_ + count_) & (ring_.size() - 1)];
  p = SentPacket{};
  p.packet_number = packet_number;
  ++count_;
  return p;
}

SentPacket* SentPackets::find(uint64_t packet_number) {
  if (packet_number < first_ || packet_number - first_ >= count_) return nullptr;
  return &at_index(static_cast<size_t>(packet_number - first_));
}

void SentPackets::pop_settled() {
  while (count_ > 0 && ring_[head_].state != SentPacket::State::in_flight) {
    head_ = (head_ + 1) & (ring_.size() - 1);
    --count_;
    ++first_;
  }
}

void SentPackets::grow() {
  std::vector<SentPacket> bigger(ring_.size() * 2);
  for (size_t i = 0; i < count_; ++i) bigger[i] = at_index(i);
  ring_.swap(bigger);
  head_ = 0;
}

}  // namespace braid::transport
