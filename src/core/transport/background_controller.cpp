#include "core/transport/background_controller.hpp"

#include <algorithm>

namespace braid::transport {

namespace {
// RFC 6817 §3.3: GAIN = 1 (at most one packet per RTT of additive increase).
constexpr double kGain = 1.0;
// RFC 6817 §3.3: MIN_CWND = 2 packets; initial window as RFC 9002 §7.2.
constexpr uint64_t kMinCwndPackets = 2;
constexpr uint64_t kInitialWindowPackets = 10;
// LEDBAT++ §4.3: a multiplicative decrease removes at most half the window per RTT.
constexpr double kMaxDecreasePerRtt = 0.5;
// LEDBAT++ §4.2: slow start ends once delay reaches 3/4 of the target.
constexpr double kSlowStartExit = 0.75;
// Our choice: a queue below a quarter of the target for 8 RTTs while the
// window is under 1/8 of its largest size means the competing traffic has
// left, so growing at one packet per RTT would waste the link: slow start
// again. (A window near the BDP with an empty queue is just "full link, no
// queue" — slow-starting from there overshoots, so that case grows additively.)
constexpr double kQuietFraction = 0.25;
constexpr double kQuietRtts = 8;
constexpr double kRestartBelowMaxFraction = 1.0 / 8;
// Our choice: while the queue stays below kQuietFraction of the target the
// window may also grow multiplicatively, up to this much per RTT, fading to
// LEDBAT's additive step as the queue nears that fraction. RFC 6817's one
// packet per RTT needs seconds to refill a 100 Mbit/s path after the other
// traffic leaves (a 20 ms BDP is ~170 packets); the delay signal, not the
// step size, is what keeps a scavenger out of the way.
constexpr double kQuietGrowthPerRtt = 0.5;
constexpr Duration kMinute = Duration::seconds(60);
}  // namespace

BackgroundController::BackgroundController(const ControllerConfig& cfg)
    : mss_(cfg.max_datagram_size),
      target_(cfg.background_target),
      cwnd_(Bytes(kInitialWindowPackets * cfg.max_datagram_size.count())) {
  base_minutes_.fill(Duration::infinite());
  recent_.fill(Duration::infinite());
}

void BackgroundController::on_packet_sent(Time, uint64_t, Bytes, Bytes) {}

Duration BackgroundController::base_delay() const {
  Duration best = Duration::infinite();
  for (const auto& d : base_minutes_) best = std::min(best, d);
  return best;
}

void BackgroundController::update_delays(const CongestionEvent& ev) {
  const Duration sample = ev.rtt.latest_adjusted;
  const int64_t minute = ev.now.ns() / kMinute.ns();
  if (minute != current_minute_) {
    // A new minute opens a new bucket; the oldest of ten is forgotten.
    if (current_minute_ >= 0) base_index_ = (base_index_ + 1) % kBaseHistory;
    base_minutes_[base_index_] = sample;
    current_minute_ = minute;
  } else {
    base_minutes_[base_index_] = std::min(base_minutes_[base_index_], sample);
  }
  recent_[recent_index_] = sample;
  recent_index_ = (recent_index_ + 1) % kCurrentFilter;
  recent_count_ = std::min(recent_count_ + 1, kCurrentFilter);
  Duration current = Duration::infinite();
  for (size_t i = 0; i < recent_count_; ++i) current = std::min(current, recent_[i]);
  queuing_delay_ = current - base_delay();
}

void BackgroundController::on_congestion_event(const CongestionEvent& ev) {
  if (ev.rtt.updated) update_delays(ev);
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
  } else if (acked.count() > 0 && ev.rtt.has_sample && recent_count_ > 0) {
    const double q = queuing_delay_.to_seconds() / target_.to_seconds();  // delay in targets
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
    cwnd_ = std::min(cwnd_, std::max(allowed, Bytes(kMinCwndPackets * mss_.count())));
  }
  cwnd_ = std::max(cwnd_, Bytes(kMinCwndPackets * mss_.count()));
  max_cwnd_ = std::max(max_cwnd_, cwnd_);
  pacing_ = window_pacing_rate(cwnd_, ev.rtt);
}

}  // namespace braid::transport
