#include "core/transport/rtt_estimator.hpp"

#include <algorithm>

namespace braid::transport {

void RttEstimator::on_sample(Duration latest, Duration ack_delay) {
  latest_ = latest;
  if (!has_sample_) {
    has_sample_ = true;
    min_ = latest;
    adjusted_ = latest;
    smoothed_ = latest;
    rttvar_ = latest / 2;
    return;
  }
  min_ = std::min(min_, latest);
  adjusted_ = latest;
  if (latest >= min_ + ack_delay) adjusted_ = latest - ack_delay;
  const Duration diff = smoothed_ > adjusted_ ? smoothed_ - adjusted_ : adjusted_ - smoothed_;
  rttvar_ = rttvar_ * 0.75 + diff * 0.25;
  smoothed_ = smoothed_ * 0.875 + adjusted_ * 0.125;
}

Duration RttEstimator::pto_base(Duration max_ack_delay) const {
  return smoothed_ + std::max(rttvar_ * 4.0, kGranularity) + max_ack_delay;
}

}  // namespace braid::transport
