// Pacing as a decorator around any congestion controller (QUICHE's
// PacingSender idea): the wrapped controller says how fast; the pacer turns
// that into "the next packet may leave at time T", with at most one quantum
// sent back-to-back. A token bucket in virtual time: tokens accrue at the
// pacing rate up to the quantum, and a packet spends its size.
#pragma once

#include <memory>

#include "core/transport/congestion_controller.hpp"

namespace braid::transport {

struct PacerConfig {
  /// Burst allowance in time at the current rate; the quantum is
  /// max(kMinQuantumPackets packets, rate × burst_time). 250 µs keeps a
  /// 200 Mbit/s lane's bursts at ~6 kB, far below any sane bottleneck buffer,
  /// while a real engine with ~100 µs timer slack still meets the rate.
  Duration burst_time = Duration::micros(250);
  /// At least two packets may go back-to-back (BBR's send quantum floor).
  uint32_t min_quantum_packets = 2;
  /// Once the bucket is empty, the next send waits until this long's credit
  /// has accrued (at least one packet, at most the quantum), then those
  /// packets go together. The rate is the same; what changes is how often a
  /// real sender must wake — once per packet is ~17 000 times a second at
  /// 200 Mbit/s, and on a virtual machine each wake-up is a costly context
  /// switch. Zero: wake for every packet.
  Duration wake_time = Duration::zero();
};

/// The token bucket alone, usable without a controller (and testable so).
class Pacer {
 public:
  Pacer(Bytes max_datagram_size, PacerConfig cfg = {});

  Bytes quantum(Rate rate) const;
  /// Earliest time a packet of `size` may leave at `rate` (≤ now: send now).
  Time next_send_time(Time now, Rate rate, Bytes size) const;
  void on_packet_sent(Time now, Rate rate, Bytes size);

 private:
  double tokens_at(Time now, Rate rate) const;

  Bytes mss_;
  PacerConfig cfg_;
  double tokens_;       // bytes of send credit as of `stamp_` (may go negative)
  Time stamp_;
  bool started_ = false;
};

/// A congestion controller with pacing added; forwards every hook.
class PacedController final : public CongestionController {
 public:
  PacedController(std::unique_ptr<CongestionController> inner, Bytes max_datagram_size,
                  PacerConfig cfg = {});

  std::string_view id() const override { return inner_->id(); }
  void on_packet_sent(Time now, uint64_t packet_number, Bytes size, Bytes prior_in_flight) override;
  void on_congestion_event(const CongestionEvent& ev) override { inner_->on_congestion_event(ev); }
  void on_app_limited(Time now, Bytes in_flight) override { inner_->on_app_limited(now, in_flight); }
  Bytes congestion_window() const override { return inner_->congestion_window(); }
  Rate pacing_rate() const override { return inner_->pacing_rate(); }
  Rate bandwidth_estimate() const override { return inner_->bandwidth_estimate(); }

  /// When a packet of `size` may be sent (ignores the window; see can_send).
  Time next_send_time(Time now, Bytes size) const {
    return pacer_.next_send_time(now, inner_->pacing_rate(), size);
  }
  CongestionController& inner() { return *inner_; }
  const CongestionController& inner() const { return *inner_; }

 private:
  std::unique_ptr<CongestionController> inner_;
  Pacer pacer_;
};

}  // namespace braid::transport
