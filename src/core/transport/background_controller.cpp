#include "core/transport/background_controller.hpp"

#include <algorithm>

namespace braid::transport {

namespace {
using namespace ledbat;  // GAIN, MIN_CWND, the LEDBAT++ reactions and our quiet-restart rule
// RFC 9002 §7.2: the initial window.
constexpr uint64_t kInitialWindowPackets = 10;
}  // namespace

BackgroundController::BackgroundController(const ControllerConfig& cfg)
    : mss_(cfg.max_datagram_size),
      target_(cfg.background_target),
      cwnd_(Bytes(kInitialWindowPackets * cfg.max_datagram_size.count())) {}

void BackgroundController::on_packet_sent(Time, uint64_t, Bytes, Bytes) {}

void BackgroundController::on_congestion_event(const CongestionEvent& ev) {
  if (ev.rtt.updated) delays_.on_sample(ev.now, ev.rtt.latest_adjusted);
  const Duration srtt = ev.rtt.smoothed;

  Bytes acked;
  for (const auto& a : ev.acked) acked += a.size;

  if (!ev.lost.empty()) {
    // RFC 6817 §3.4.1: on loss, at least halve like TCP, once per RTT.
    if (!decreased_ever_ || ev.now - last_decrease_ > srtt) {
      cwnd_ = Bytes(cwnd_.count() / 2);
      last_decrease_ = ev.now;
      decreased_ever_ = true;
      slow_start_ = false;
    }
  } else if (acked.count() > 0 && ev.rtt.has_sample && delays_.has_sample()) {
    const double q = delays_.queuing_delay().to_seconds() / target_.to_seconds();  // delay in targets
    const double cwnd = std::max(cwnd_.as_double(), 1.0);
    if (slow_start_ && q >= kSlowStartExit) slow_start_ = false;
    double delta = 0;
    if (slow_start_) {
      delta = acked.as_double();
    } else if (q <= 1.0) {
      // RFC 6817 §2.4.2: cwnd += GAIN · off_target · bytes_acked · MSS / cwnd.
      delta = kGain * (1.0 - q) * acked.as_double() * mss_.as_double() / cwnd;
      if (q < kQuietFraction) delta += kQuietGrowthPerRtt * (1.0 - q / kQuietFraction) * acked.as_double();
    } else {
      // LEDBAT++ §4.3: W += GAIN − W·(delay/target − 1) per RTT, at most W/2 off.
      delta = kGain * acked.as_double() * mss_.as_double() / cwnd -
              acked.as_double() * std::min(q - 1.0, kMaxDecreasePerRtt);
    }
    const double next = std::max(0.0, cwnd + delta);
    cwnd_ = Bytes(static_cast<uint64_t>(next));

    if (q < kQuietFraction) {
      if (quiet_since_ == Time::never()) quiet_since_ = ev.now;
      if (!slow_start_ && ev.now - quiet_since_ >= srtt * kQuietRtts &&
          cwnd_.as_double() < max_cwnd_.as_double() * kRestartBelowMaxFraction) {
        slow_start_ = true;
      }
    } else {
      quiet_since_ = Time::never();
    }
    // RFC 6817 §2.4.2: never grow beyond what is actually in flight (+ growth).
    const Bytes allowed = ev.prior_in_flight + std::max(acked, mss_);
    cwnd_ = std::min(cwnd_, std::max(allowed, Bytes(kMinPackets * mss_.count())));
  }
  cwnd_ = std::max(cwnd_, Bytes(kMinPackets * mss_.count()));
  max_cwnd_ = std::max(max_cwnd_, cwnd_);
  pacing_ = window_pacing_rate(cwnd_, ev.rtt);
}

}  // namespace braid::transport
