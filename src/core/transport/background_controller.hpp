// `background` — a scavenger that yields to other traffic: LEDBAT (RFC 6817)
// with the faster reactions of LEDBAT++ (draft-irtf-iccrg-ledbat-plus-plus).
//
// It measures queueing delay as current RTT minus base RTT (the minimum over
// the last 10 minutes, RFC 6817 §3.4.2 BASE_HISTORY) and steers the window so
// that added delay stays at `background_target` (default 10 ms; RFC 6817 §3.3
// allows up to 100 ms, and 25 ms let a newcomer's slow start overflow the
// queue before the scavenger had stepped aside). While another flow fills the queue beyond the target
// the window shrinks multiplicatively to 2 packets (near-zero rate); when the
// queue empties again it re-enters slow start and takes the link back within
// a handful of round trips instead of RFC 6817's one packet per RTT.
#pragma once

#include <cstdint>

#include "core/transport/congestion_controller.hpp"
#include "core/transport/ledbat.hpp"

namespace braid::transport {

class BackgroundController final : public CongestionController {
 public:
  explicit BackgroundController(const ControllerConfig& cfg);

  std::string_view id() const override { return "background"; }
  void on_packet_sent(Time now, uint64_t packet_number, Bytes size, Bytes prior_in_flight) override;
  void on_congestion_event(const CongestionEvent& ev) override;
  Bytes congestion_window() const override { return cwnd_; }
  Rate pacing_rate() const override { return pacing_; }

  /// Current queueing-delay estimate (current RTT − base RTT).
  Duration queuing_delay() const { return delays_.queuing_delay(); }
  bool in_slow_start() const { return slow_start_; }

 private:
  Bytes mss_;
  Duration target_;
  Bytes cwnd_;
  Rate pacing_ = kUnlimitedRate;
  bool slow_start_ = true;

  ledbat::DelayFilter delays_;  // RFC 6817 §3.4.2: base and current delay

  // Once-per-RTT reactions (loss halving; decisions to re-enter slow start).
  Time last_decrease_ = Time::zero();
  bool decreased_ever_ = false;
  Time quiet_since_ = Time::never();
  Bytes max_cwnd_;
};

}  // namespace braid::transport
