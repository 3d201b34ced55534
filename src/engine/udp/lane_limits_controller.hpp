// Two limits the engine puts around any congestion controller, as a
// decorator (QUICHE's idea, like the core's PacedController). Pure: no
// clock, no I/O.
//
//  - `--rate-limit RATE`: the pacing rate is capped. The controller still
//    decides the window and reacts to delay and loss; the cap only lowers
//    how fast the pacer lets packets out, so a capped lane's delivery-rate
//    samples never exceed the cap and its window (≈ BDP at the cap) follows.
//
//  - the I/O shell's reaction time: a real lane learns of acks only when its
//    thread wakes (scheduling, timer, recvmmsg/GRO batching — tens to
//    hundreds of µs), so the window must also cover pacing rate × that
//    time, or on a very short path (loopback: 30 µs min RTT, so
//    1.5 × BDP ≈ 10 packets) the lane idles between acks and never learns
//    the path is faster (BBR covers the same effect with its ack-aggregation
//    term, draft-cardwell-iccrg-bbr-congestion-control-02 §4.6.4.2). Pacing
//    still sets the rate, so on a long path, where 1.5 × BDP is far larger,
//    this changes nothing. Not before the controller has measured a rate:
//    until then its pacing rate is a guess (BBR's: the initial window over
//    a nominal 1 ms, × 2.77 — 326 Mbit/s for 1472-byte packets), and that
//    × 2 ms made a lane's first flight 55 packets instead of 10: on a
//    4 Mbit/s uplink two lanes' first flights stood ~300 ms in the queue,
//    and every RTT sample of the start read part of it as path. (Most of
//    the +60 ms netlab's uplink4 then showed was its emulator delivering
//    bursts in one piece; docs/benchmarks.md, "The emulator's lumps".)
#pragma once

#include <memory>
#include <optional>

#include "core/transport/congestion_controller.hpp"

namespace braid::udp {

struct LaneLimits {
  std::optional<Rate> rate_cap;
  /// The window covers at least pacing rate × this.
  Duration io_reaction = Duration::millis(2);
};

class LaneLimitsController final : public transport::CongestionController {
 public:
  LaneLimitsController(std::unique_ptr<transport::CongestionController> inner, LaneLimits limits)
      : inner_(std::move(inner)), limits_(limits) {}

  std::string_view id() const override { return inner_->id(); }
  void on_packet_sent(Time now, uint64_t pn, Bytes size, Bytes prior_in_flight) override {
    inner_->on_packet_sent(now, pn, size, prior_in_flight);
  }
  void on_congestion_event(const transport::CongestionEvent& ev) override { inner_->on_congestion_event(ev); }
  void on_app_limited(Time now, Bytes in_flight) override { inner_->on_app_limited(now, in_flight); }
  Bytes congestion_window() const override {
    if (inner_->bandwidth_estimate().is_zero()) return inner_->congestion_window();
    return std::max(inner_->congestion_window(), pacing_rate().bytes_in(limits_.io_reaction));
  }
  Rate pacing_rate() const override {
    return limits_.rate_cap ? std::min(inner_->pacing_rate(), *limits_.rate_cap) : inner_->pacing_rate();
  }
  Rate bandwidth_estimate() const override {
    return limits_.rate_cap ? std::min(inner_->bandwidth_estimate(), *limits_.rate_cap) : inner_->bandwidth_estimate();
  }

  const LaneLimits& limits() const { return limits_; }
  /// A new cap (the session splits --rate-limit again when lanes come or go).
  void set_rate_cap(std::optional<Rate> cap) { limits_.rate_cap = cap; }

 private:
  std::unique_ptr<transport::CongestionController> inner_;
  LaneLimits limits_;
};

}  // namespace braid::udp
