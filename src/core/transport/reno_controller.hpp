// NewReno as RFC 9002 §7 specifies it for QUIC: slow start, additive increase
// of one datagram per window, halve on loss once per recovery period. The
// loss-based reference braid's own controllers are compared against, and the
// "competing TCP-like flow" of the simulated bottleneck.
#pragma once

#include "core/transport/congestion_controller.hpp"

namespace braid::transport {

class RenoController final : public CongestionController {
 public:
  explicit RenoController(const ControllerConfig& cfg);

  std::string_view id() const override { return "reno"; }
  void on_packet_sent(Time now, uint64_t packet_number, Bytes size, Bytes prior_in_flight) override;
  void on_congestion_event(const CongestionEvent& ev) override;
  Bytes congestion_window() const override { return cwnd_; }
  Rate pacing_rate() const override { return pacing_; }

 private:
  Bytes mss_;
  Bytes cwnd_;
  Bytes ssthresh_;
  Time recovery_start_ = Time::zero();
  bool in_recovery_ever_ = false;
  Rate pacing_ = kUnlimitedRate;
};

}  // namespace braid::transport
