#include "core/transport/lane_sender.hpp"

#include <algorithm>

namespace braid::transport {

namespace {
// RFC 9002 §6.1.1: a packet is lost once 3 later packets are acknowledged.
constexpr uint64_t kPacketThreshold = 3;
// RFC 9002 §6.1.2: ... or once it is older than 9/8 of the RTT.
constexpr double kTimeThreshold = 9.0 / 8.0;
// RFC 9002 §6.2.4: a PTO sends up to two ack-eliciting probe packets.
constexpr uint32_t kProbesPerTimeout = 2;
// Cap on PTO exponential backoff so a dead lane is still probed every few seconds.
constexpr uint32_t kMaxPtoBackoff = 6;
}  // namespace

LaneSender::LaneSender(const SenderConfig& cfg, std::unique_ptr<CongestionController> cc)
    : cfg_(cfg),
      cc_(std::move(cc), cfg.max_datagram_size, cfg.pacer),
      max_data_(cfg.initial_max_data.count()) {
  acked_.reserve(1024);
  lost_.reserve(1024);
  acked_data_.reserve(4 * 1024);
}

std::unique_ptr<LaneSender> LaneSender::create(const SenderConfig& cfg, std::string_view cc_id) {
  ControllerConfig cc_cfg = cfg.cc;
  cc_cfg.max_datagram_size = cfg.max_datagram_size;
  auto cc = make_controller(cc_id, cc_cfg);
  if (!cc) return nullptr;
  return std::make_unique<LaneSender>(cfg, std::move(cc));
}

void LaneSender::enqueue(const DataRange& range) {
  if (range.length == 0) return;
  queue_.push_back(range);
  queued_bytes_ += range.length;
}

bool LaneSender::all_acked() const {
  return queue_.empty() && retransmit_.empty() && in_flight_ == 0;
}

void LaneSender::cancel_piece(uint64_t piece) {
  const auto of_piece = [piece](const DataRange& r) { return r.piece == piece; };
  for (const DataRange& r : queue_)
    if (of_piece(r)) queued_bytes_ -= r.length;
  std::erase_if(queue_, of_piece);
  std::erase_if(retransmit_, of_piece);
  for (size_t i = 0; i < sent_.size(); ++i) {
    SentPacket& p = sent_.at_index(i);
    const auto end = std::remove_if(p.data.begin(), p.data.begin() + p.data_count, of_piece);
    p.data_count = static_cast<uint8_t>(end - p.data.begin());
  }
}

bool LaneSender::has_data_to_send() const {
  return !retransmit_.empty() || (!queue_.empty() && new_data_sent_ < max_data_);
}

// ---------------------------------------------------------------------------
// Incoming feedback.

TransportError LaneSender::on_datagram_received(Time now, std::span<const uint8_t> packet) {
  acked_data_.clear();
  ByteReader r(packet);
  PacketHeader h;
  if (auto e = decode_header(r, h); e != TransportError::ok) return e;
  if (h.kind != PacketKind::feedback) return TransportError::wrong_packet_kind;
  if (h.lane_id != cfg_.lane_id) return TransportError::wrong_lane;
  while (!r.empty()) {
    Frame f;
    if (auto e = decode_frame(r, f); e != TransportError::ok) return e;
    switch (f.type) {
      case FrameType::ack:
        if (auto e = on_ack(now, f.ack); e != TransportError::ok) return e;
        break;
      case FrameType::max_data:
        // Limits only grow; an old (replayed or reordered) MAX_DATA is harmless.
        max_data_ = std::max(max_data_, f.max_data.count());
        break;
      case FrameType::padding:
      case FrameType::ping:
        break;
      case FrameType::data:
        return TransportError::wrong_packet_kind;
    }
  }
  return TransportError::ok;
}

TransportError LaneSender::on_ack(Time now, const AckFrame& ack) {
  if (ack.largest >= next_packet_number_) return TransportError::ack_of_unsent_packet;
  acked_.clear();
  lost_.clear();
  const uint64_t prior_in_flight = in_flight_;
  const uint64_t window_lo = sent_.first_number();
  const uint64_t window_hi = window_lo + sent_.size();  // exclusive
  bool largest_newly_acked = false;
  Time largest_sent_time;
  bool any_eliciting = false;

  const auto e = ack.for_each_range([&](Range range) {
    const uint64_t lo = std::max(range.lo, window_lo);
    const uint64_t hi = std::min(range.hi + 1, window_hi);
    for (uint64_t pn = lo; pn < hi; ++pn) {
      SentPacket* p = sent_.find(pn);
      if (!p || p->state != SentPacket::State::in_flight) continue;
      p->state = SentPacket::State::acked;
      in_flight_ -= p->size;
      sampler_.on_packet_acked(now, p->sent_time, Bytes(p->size), p->delivery);
      acked_.push_back({pn, Bytes(p->size), p->sent_time});
      any_eliciting |= p->ack_eliciting;
      for (size_t i = 0; i < p->data_count; ++i) {
        stats_.data_bytes_acked += p->data[i].length;
        acked_data_.push_back(p->data[i]);
      }
      if (pn == ack.largest) {
        largest_newly_acked = true;
        largest_sent_time = p->sent_time;
      }
    }
  });
  if (e != TransportError::ok) return e;
  if (acked_.empty()) {
    // A replayed or reordered old ack: nothing changes (RFC 9002 §A.7).
    ++stats_.stale_acks;
    return TransportError::ok;
  }
  stats_.packets_acked += acked_.size();
  if (!any_acked_ || ack.largest > largest_acked_) largest_acked_ = ack.largest;
  any_acked_ = true;

  // RFC 9002 §5.1: an RTT sample only when the largest acked is newly acked.
  bool rtt_updated = false;
  if (largest_newly_acked && any_eliciting) {
    const Duration ack_delay = std::min(ack.ack_delay, cfg_.peer_max_ack_delay);
    rtt_.on_sample(now - largest_sent_time, ack_delay);
    rtt_updated = true;
  }
  detect_lost(now);
  // RFC 9002 §6.2.1: the PTO backoff resets when an ack arrives.
  pto_backoff_ = 0;
  notify_controller(now, prior_in_flight, rtt_updated);
  sent_.pop_settled();
  return TransportError::ok;
}

void LaneSender::detect_lost(Time now) {
  loss_time_ = Time::never();
  if (!any_acked_) return;
  const Duration loss_delay = std::max(
      std::max(rtt_.latest(), rtt_.smoothed()) * kTimeThreshold, RttEstimator::kGranularity);
  for (size_t i = 0; i < sent_.size(); ++i) {
    SentPacket& p = sent_.at_index(i);
    if (p.packet_number > largest_acked_) break;
    if (p.state != SentPacket::State::in_flight) continue;
    const bool too_old = p.sent_time + loss_delay <= now;
    const bool reordered_past = largest_acked_ >= p.packet_number + kPacketThreshold;
    if (!too_old && !reordered_past) {
      loss_time_ = std::min(loss_time_, p.sent_time + loss_delay);
      continue;
    }
    p.state = SentPacket::State::lost;
    in_flight_ -= p.size;
    ++stats_.packets_lost;
    stats_.bytes_lost += p.size;
    lost_.push_back({p.packet_number, Bytes(p.size), p.sent_time});
    // Only the lost data goes out again, in new packets.
    for (size_t k = 0; k < p.data_count; ++k) retransmit_.push_back(p.data[k]);
  }
}

void LaneSender::notify_controller(Time now, uint64_t prior_in_flight, bool rtt_updated) {
  CongestionEvent ev;
  ev.now = now;
  ev.prior_in_flight = Bytes(prior_in_flight);
  ev.in_flight = Bytes(in_flight_);
  ev.acked = acked_;
  ev.lost = lost_;
  if (!acked_.empty()) ev.rate = sampler_.finish_sample(rtt_.has_sample() ? rtt_.min() : Duration::zero());
  ev.rtt.has_sample = rtt_.has_sample();
  ev.rtt.updated = rtt_updated;
  ev.rtt.latest = rtt_.latest();
  ev.rtt.latest_adjusted = rtt_.latest_adjusted();
  ev.rtt.min = rtt_.min();
  ev.rtt.smoothed = rtt_.smoothed();
  ev.total_delivered = sampler_.delivered();
  cc_.on_congestion_event(ev);
}

// ---------------------------------------------------------------------------
// Timers.

Time LaneSender::loss_detection_deadline() const {
  if (loss_time_ != Time::never()) return loss_time_;
  if (in_flight_ == 0 || last_ack_eliciting_sent_ == Time::never()) return Time::never();
  // RFC 9002 §6.2.1: PTO = (srtt + max(4·rttvar, 1 ms) + max_ack_delay) · 2^pto_count.
  const Duration pto = rtt_.pto_base(cfg_.peer_max_ack_delay) *
                       static_cast<double>(uint64_t{1} << std::min(pto_backoff_, kMaxPtoBackoff));
  return last_ack_eliciting_sent_ + pto;
}

void LaneSender::on_timeout(Time now) {
  if (loss_time_ != Time::never() && loss_time_ <= now) {
    acked_.clear();
    lost_.clear();
    const uint64_t prior = in_flight_;
    detect_lost(now);
    if (!lost_.empty()) notify_controller(now, prior, false);
    sent_.pop_settled();
    return;
  }
  const Time pto = loss_detection_deadline();
  if (pto <= now) {
    ++stats_.pto_count;
    ++pto_backoff_;
    probes_pending_ = kProbesPerTimeout;
    probe_cursor_ = sent_.first_number();
    // Re-arm from now so the next PTO backs off even if probes are delayed.
    last_ack_eliciting_sent_ = now;
  }
}

Time LaneSender::poll_timeout() const {
  Time t = loss_detection_deadline();
  if (probes_pending_ > 0) return Time::zero();  // send probes immediately
  if (has_data_to_send() && cc_.can_send(Bytes(in_flight_))) {
    t = std::min(t, cc_.next_send_time(last_poll_, cfg_.max_datagram_size));
  }
  return t;
}

// ---------------------------------------------------------------------------
// Outgoing packets.

bool LaneSender::add_data_frame(ByteWriter& w, Transmit& t, SentPacket& p, DataRange& range,
                                bool retransmit) {
  if (p.data_count == kMaxDataFramesPerPacket) return false;
  const size_t overhead = data_frame_overhead(range);
  if (w.remaining() <= overhead) return false;
  DataRange part = range;
  part.length = static_cast<uint32_t>(std::min<size_t>(range.length, w.remaining() - overhead));
  if (!retransmit) {
    part.length = static_cast<uint32_t>(std::min<uint64_t>(part.length, max_data_ - new_data_sent_));
    if (part.length == 0) return false;
  }
  const size_t at = w.written() + data_frame_overhead(part);
  if (encode_data_frame(w, part).empty()) return false;
  t.payloads[t.payload_count++] = PayloadSlot{part, at};
  p.data[p.data_count++] = part;
  if (retransmit) {
    stats_.data_bytes_retransmitted += part.length;
  } else {
    stats_.data_bytes_sent += part.length;
    new_data_sent_ += part.length;
    queued_bytes_ -= part.length;
  }
  range.offset += part.length;
  range.length -= part.length;
  return true;
}

bool LaneSender::fill_data(ByteWriter& w, Transmit& t, SentPacket& p, bool) {
  bool any = false;
  while (!retransmit_.empty() && add_data_frame(w, t, p, retransmit_.front(), true)) {
    any = true;
    if (retransmit_.front().length == 0) retransmit_.pop_front();
  }
  while (!queue_.empty() && new_data_sent_ < max_data_ &&
         add_data_frame(w, t, p, queue_.front(), false)) {
    any = true;
    if (queue_.front().length == 0) queue_.pop_front();
  }
  return any;
}

bool LaneSender::fill_probe_copy(ByteWriter& w, Transmit& t, SentPacket& p) {
  // Nothing new to send: carry the data of the oldest packet still in flight
  // (RFC 9002 §6.2.4). The data now belongs to the probe: if the old packet
  // is later declared lost, there is nothing left in it to resend, and if the
  // probe is lost, the probe's loss resends it — never both.
  for (; probe_cursor_ < p.packet_number; ++probe_cursor_) {
    SentPacket* old = sent_.find(probe_cursor_);
    if (!old || old->state != SentPacket::State::in_flight || old->data_count == 0) continue;
    size_t moved = 0;
    for (; moved < old->data_count; ++moved) {
      DataRange copy = old->data[moved];
      if (!add_data_frame(w, t, p, copy, true)) break;
      if (copy.length != 0) {  // only part fitted: keep the rest with the old packet
        old->data[moved] = copy;
        break;
      }
    }
    std::copy(old->data.begin() + static_cast<std::ptrdiff_t>(moved),
              old->data.begin() + old->data_count, old->data.begin());
    old->data_count = static_cast<uint8_t>(old->data_count - moved);
    if (old->data_count == 0) ++probe_cursor_;
    return p.data_count > 0;
  }
  return false;
}

std::optional<Transmit> LaneSender::poll_transmit(Time now, std::span<uint8_t> out) {
  last_poll_ = now;
  if (out.size() < cfg_.max_datagram_size.count()) return std::nullopt;
  const bool probe = probes_pending_ > 0;
  if (!probe) {
    if (!has_data_to_send()) {
      if (cc_.can_send(Bytes(in_flight_))) {
        sampler_.on_app_limited(Bytes(in_flight_));
        cc_.on_app_limited(now, Bytes(in_flight_));
      }
      return std::nullopt;
    }
    if (!cc_.can_send(Bytes(in_flight_))) return std::nullopt;
    if (cc_.next_send_time(now, cfg_.max_datagram_size) > now) return std::nullopt;
  }

  const size_t limit = cfg_.max_datagram_size.count() - kAeadTagSize;
  ByteWriter w(out.first(limit));
  Transmit t;
  t.packet_number = next_packet_number_;
  t.is_probe = probe;
  encode_header(w, PacketHeader{PacketKind::data, cfg_.lane_id, t.packet_number});

  // The ledger entry is filled as frames go in (it holds the data ranges).
  SentPacket& p = sent_.push(t.packet_number);
  bool any = fill_data(w, t, p, probe);
  if (!any && probe) any = fill_probe_copy(w, t, p);
  if (!any) encode_ping_frame(w);  // a probe with nothing to carry still elicits an ack
  if (probe) --probes_pending_;

  const uint64_t wire_size = w.written() + kAeadTagSize;
  p.sent_time = now;
  p.size = static_cast<uint32_t>(wire_size);
  p.ack_eliciting = true;
  p.delivery = sampler_.on_packet_sent(now, Bytes(in_flight_));
  cc_.on_packet_sent(now, t.packet_number, Bytes(wire_size), Bytes(in_flight_));
  in_flight_ += wire_size;
  last_ack_eliciting_sent_ = now;
  ++next_packet_number_;
  ++stats_.packets_sent;
  stats_.bytes_sent += wire_size;
  t.size = w.written();
  return t;
}

}  // namespace braid::transport
