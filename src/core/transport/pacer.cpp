#include "core/transport/pacer.hpp"

#include <algorithm>
#include <cmath>

namespace braid::transport {

Pacer::Pacer(Bytes max_datagram_size, PacerConfig cfg)
    : mss_(max_datagram_size), cfg_(cfg), tokens_(0) {}

Bytes Pacer::quantum(Rate rate) const {
  const Bytes floor(static_cast<uint64_t>(cfg_.min_quantum_packets) * mss_.count());
  return std::max(floor, rate.bytes_in(cfg_.burst_time));
}

double Pacer::tokens_at(Time now, Rate rate) const {
  const double cap = quantum(rate).as_double();
  if (!started_) return cap;
  const double elapsed = now > stamp_ ? (now - stamp_).to_seconds() : 0.0;
  return std::min(cap, tokens_ + elapsed * rate.bytes_per_second());
}

Time Pacer::next_send_time(Time now, Rate rate, Bytes size) const {
  const double tokens = tokens_at(now, rate);
  // A packet needs its size in credit (a full quantum if it is larger).
  const double cap = quantum(rate).as_double();
  const double need = std::min(size.as_double(), cap);
  if (tokens >= need) return now;
  if (rate.is_zero()) return Time::never();
  // Out of credit: wait for a batch's worth, not just the next packet's.
  const double batch = std::min(cap, std::max(need, rate.bytes_in(cfg_.wake_time).as_double()));
  const double wait_s = (batch - tokens) / rate.bytes_per_second();
  return now + Duration::nanos(static_cast<int64_t>(std::ceil(wait_s * 1e9)));
}

void Pacer::on_packet_sent(Time now, Rate rate, Bytes size) {
  tokens_ = tokens_at(now, rate) - size.as_double();
  stamp_ = std::max(now, stamp_);
  started_ = true;
}

PacedController::PacedController(std::unique_ptr<CongestionController> inner,
                                 Bytes max_datagram_size, PacerConfig cfg)
    : inner_(std::move(inner)), pacer_(max_datagram_size, cfg) {}

void PacedController::on_packet_sent(Time now, uint64_t packet_number, Bytes size,
                                     Bytes prior_in_flight) {
  pacer_.on_packet_sent(now, inner_->pacing_rate(), size);
  inner_->on_packet_sent(now, packet_number, size, prior_in_flight);
}

}  // namespace braid::transport
