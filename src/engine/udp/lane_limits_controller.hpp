// `--rate-limit RATE`: a decorator that caps any congestion controller's
// pacing rate (QUICHE's decorator idea, like PacedController in the core).
// The controller still decides the window and reacts to delay and loss; the
// cap only lowers how fast the pacer lets packets out, so a capped lane's
// delivery-rate samples never exceed the cap and its window (≈ BDP at the
// cap) follows. Pure: no clock, no I/O.
#pragma once

#include <memory>

#include "core/transport/congestion_controller.hpp"

namespace braid::udp {

class RateCappedController final : public transport::CongestionController {
 public:
  RateCappedController(std::unique_ptr<transport::CongestionController> inner, Rate cap)
      : inner_(std::move(inner)), cap_(cap) {}

  std::string_view id() const override { return inner_->id(); }
  void on_packet_sent(Time now, uint64_t pn, Bytes size, Bytes prior_in_flight) override {
    inner_->on_packet_sent(now, pn, size, prior_in_flight);
  }
  void on_congestion_event(const transport::CongestionEvent& ev) override { inner_->on_congestion_event(ev); }
  void on_app_limited(Time now, Bytes in_flight) override { inner_->on_app_limited(now, in_flight); }
  Bytes congestion_window() const override { return inner_->congestion_window(); }
  Rate pacing_rate() const override { return std::min(inner_->pacing_rate(), cap_); }
  Rate bandwidth_estimate() const override { return std::min(inner_->bandwidth_estimate(), cap_); }

  Rate cap() const { return cap_; }

 private:
  std::unique_ptr<transport::CongestionController> inner_;
  Rate cap_;
};

}  // namespace braid::udp
