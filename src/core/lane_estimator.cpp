#include "core/lane_estimator.hpp"

#include <algorithm>
#include <cmath>

namespace braid::core {
namespace {
constexpr double kAppLimitedGrowth = 8.0;
}  // namespace

LaneEstimator::LaneEstimator(EstimatorConfig cfg, std::optional<Rate> hint) : cfg_(cfg) {
  cfg_.window = std::clamp(cfg_.window, 1, static_cast<int>(window_.size()));
  if (hint) estimate_ = *hint;
}

SendSnapshot LaneEstimator::on_send(Time now, bool lane_idle) {
  if (lane_idle) {
    // BBR: with nothing in flight there is no ack clock; restart it now so the
    // idle time before this send is not counted as slow delivery.
    delivered_time_ = now;
    first_sent_time_ = now;
  }
  return SendSnapshot{delivered_, delivered_time_, first_sent_time_, now, lane_idle};
}

std::optional<RateSample> LaneEstimator::on_ack(Bytes bytes, const SendSnapshot& snap, Time now,
                                                Duration recv_duration, bool late) {
  delivered_ += bytes;
  delivered_time_ = now;
  first_sent_time_ = snap.sent_time;

  // RTT: what the ack took beyond the piece's own time on the wire at the receiver.
  const Duration rtt = (now - snap.sent_time) - recv_duration;
  if (rtt > Duration::zero()) update_rtt(rtt);

  if (late && !cfg_.learn_from_late_acks) return std::nullopt;

  const Duration send_elapsed = snap.sent_time - snap.first_sent_time;
  const Duration ack_elapsed = now - snap.delivered_time;
  Duration interval = std::max(send_elapsed, ack_elapsed);
  const Bytes delta = delivered_ - snap.delivered;
  // A sample whose interval started from an idle lane, or from the lane's very
  // first send, contains one idle round trip; take it out, but never go below
  // the receiver's own time for the piece.
  const bool app_limited = snap.app_limited || snap.delivered.count() == 0;
  if (app_limited && rtt_samples_ > 0) {
    const Duration idle_out = std::max(interval - min_rtt_, recv_duration);
    // Nothing left: the receiver saw the piece all at once (the engine's
    // receiver sees sealed 256 KiB frames, so a piece of one frame shows no
    // time at all) and the round trip just measured holds its whole time on
    // the wire. Keep the interval, round trip and all: a lower bound on the
    // rate rather than none — a lane that never yields a sample would be
    // probed with one small piece after another for ever.
    if (idle_out >= cfg_.min_sample_interval) interval = idle_out;
  }
  if (interval < cfg_.min_sample_interval) return std::nullopt;

  RateSample s{Rate::over(delta, interval), interval, app_limited};
  if (late && recv_duration > Duration::zero() && !before_stall_.is_zero()) {
    // The ack-interval spans the stall itself. The receiver's own time for the
    // piece says how fast the lane moves now that it moves again; trust it up
    // to the estimate the stall took away (MISSION.md §1: a stalled lane's late
    // ack must teach, or the estimate falls and never recovers).
    const Rate flowing = Rate::over(bytes, std::max(recv_duration, cfg_.min_sample_interval));
    s.rate = std::max(s.rate, std::min(flowing, before_stall_));
    before_stall_ = Rate::zero();
    force_rate(s.rate);
    return s;
  }
  if (app_limited && measured()) {
    // One idle-start sample may raise the estimate at most kAppLimitedGrowth
    // times: a piece that arrived in one burst from a socket buffer overstates
    // what the lane sustains, but a lane back from an outage must recover fast.
    s.rate = std::min(s.rate, estimate_ * kAppLimitedGrowth);
    if (s.rate <= estimate_) return s;
  }
  accept(s.rate);
  return s;
}

void LaneEstimator::accept(Rate r) {
  if (!measured()) {
    window_len_ = 0;  // the first ack replaces the hint entirely
    deviation_ = kFirstDeviation;
  } else if (estimate_.bytes_per_second() > 0) {
    const double off = std::abs(r.bytes_per_second() - estimate_.bytes_per_second()) / estimate_.bytes_per_second();
    deviation_ = 0.75 * deviation_ + 0.25 * std::min(off, 1.0);
  }
  ++samples_taken_;
  window_[window_pos_] = r;
  window_pos_ = (window_pos_ + 1) % cfg_.window;
  window_len_ = std::min(window_len_ + 1, cfg_.window);
  // Insertion sort of at most eight samples.
  std::array<Rate, 8> sorted{};
  for (int i = 0; i < window_len_; ++i) {
    int j = i;
    for (; j > 0 && sorted[j - 1] > window_[i]; --j) sorted[j] = sorted[j - 1];
    sorted[j] = window_[i];
  }
  if (window_len_ % 2 == 1) {
    estimate_ = sorted[window_len_ / 2];
  } else {
    const auto a = sorted[window_len_ / 2 - 1], b = sorted[window_len_ / 2];
    estimate_ = Rate::bytes_per_sec((a.bytes_per_second() + b.bytes_per_second()) / 2);
  }
}

void LaneEstimator::on_stall(Bytes bytes, Duration elapsed) {
  const Rate failed = Rate::over(bytes, elapsed);
  const Rate lowered = failed * 0.5;
  if (!has_rate() || lowered < estimate_) {
    if (before_stall_.is_zero()) before_stall_ = estimate_;
    force_rate(lowered);
  }
}

void LaneEstimator::force_rate(Rate r) {
  estimate_ = r;
  window_len_ = 0;
  window_pos_ = 0;
  // Later samples then start a fresh window from this value.
  window_[0] = r;
  window_len_ = 1;
  window_pos_ = 1 % cfg_.window;
  if (samples_taken_ == 0) samples_taken_ = 1;
}

void LaneEstimator::update_rtt(Duration sample) {
  if (rtt_samples_ == 0) {
    // A hinted round trip (the connection's handshake, say) that is shorter
    // stays the minimum: the first sample may hold time the receiver's
    // timing did not see.
    min_rtt_ = min_rtt_ > Duration::zero() ? std::min(min_rtt_, sample) : sample;
    srtt_ = sample;
  } else {
    srtt_ = srtt_ * 0.875 + sample * 0.125;
    min_rtt_ = std::min(min_rtt_, sample);
  }
  ++rtt_samples_;
}

}  // namespace braid::core
