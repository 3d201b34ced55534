#include "core/transport/lane_receiver.hpp"

#include <algorithm>

namespace braid::transport {

LaneReceiver::LaneReceiver(const ReceiverConfig& cfg)
    : cfg_(cfg), received_(cfg.max_ack_ranges * 2), advertised_max_data_(cfg.receive_window.count()) {}

TransportError LaneReceiver::on_datagram_received(Time now, std::span<const uint8_t> packet,
                                                  DataSink& sink) {
  ByteReader r(packet);
  PacketHeader h;
  if (auto e = decode_header(r, h); e != TransportError::ok) return e;
  if (h.kind != PacketKind::data) return TransportError::wrong_packet_kind;
  if (h.lane_id != cfg_.lane_id) return TransportError::wrong_lane;
  const uint64_t pn = h.packet_number;
  if (received_.contains(pn) || received_.below_window(pn)) {
    ++stats_.duplicate_packets;
    // The sender may have missed our ack: make sure another one goes out.
    ack_now_ = true;
    return TransportError::duplicate_packet;
  }

  // Parse everything before acting, so a malformed packet changes nothing.
  ByteReader check = r;
  bool ack_eliciting = false;
  while (!check.empty()) {
    Frame f;
    if (auto e = decode_frame(check, f); e != TransportError::ok) return e;
    if (f.type == FrameType::ack || f.type == FrameType::max_data) return TransportError::wrong_packet_kind;
    ack_eliciting |= f.type == FrameType::data || f.type == FrameType::ping;
  }
  while (!r.empty()) {
    Frame f;
    decode_frame(r, f);
    if (f.type == FrameType::data) {
      stats_.data_bytes_received += f.data.length;
      sink.on_data(f.data, f.payload);
    }
  }

  const bool in_order = received_.empty() || pn == received_.largest() + 1;
  const bool is_largest = received_.empty() || pn > received_.largest();
  received_.insert(pn);
  ++stats_.packets_received;
  if (is_largest) largest_received_time_ = now;
  if (!ack_eliciting) return TransportError::ok;
  ++unacked_eliciting_;
  // RFC 9000 §13.2.1: ack at once on reordering (gaps speed up loss recovery),
  // and after every `ack_every` packets; otherwise within max_ack_delay.
  if (!in_order || unacked_eliciting_ >= cfg_.ack_every || stats_.packets_received <= cfg_.quick_acks) ack_now_ = true;
  if (ack_deadline_ == Time::never()) ack_deadline_ = now + cfg_.max_ack_delay;
  return TransportError::ok;
}

void LaneReceiver::on_data_consumed(Bytes n) { consumed_ += n.count(); }

Time LaneReceiver::poll_timeout() const {
  if (ack_now_) return Time::zero();
  Time t = ack_deadline_;
  // A window update is due once a quarter of the window was consumed.
  if (max_data().count() >= advertised_max_data_ + cfg_.receive_window.count() / 4) return Time::zero();
  return t;
}

std::optional<size_t> LaneReceiver::poll_transmit(Time now, std::span<uint8_t> out) {
  const bool window_update = max_data().count() >= advertised_max_data_ + cfg_.receive_window.count() / 4;
  const bool ack_due = !received_.empty() && (ack_now_ || now >= ack_deadline_);
  if (!ack_due && !window_update) return std::nullopt;
  if (out.size() < cfg_.max_datagram_size.count()) return std::nullopt;

  ByteWriter w(out.first(cfg_.max_datagram_size.count() - kAeadTagSize));
  encode_header(w, PacketHeader{PacketKind::feedback, cfg_.lane_id, next_packet_number_++});
  encode_max_data_frame(w, max_data());
  advertised_max_data_ = max_data().count();
  if (!received_.empty()) {
    const Duration delay = now > largest_received_time_ ? now - largest_received_time_ : Duration::zero();
    encode_ack_frame(w, received_, delay, cfg_.max_ack_ranges);
  }
  unacked_eliciting_ = 0;
  ack_now_ = false;
  ack_deadline_ = Time::never();
  ++stats_.feedback_packets_sent;
  return w.written();
}

}  // namespace braid::transport
