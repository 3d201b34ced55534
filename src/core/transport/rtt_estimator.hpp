// Round-trip time estimation exactly as RFC 9002 §5: min_rtt over the lane's
// life, smoothed_rtt and rttvar as EWMAs (1/8 and 1/4), the peer's ack delay
// subtracted only when that does not go below min_rtt.
#pragma once

#include "core/units.hpp"

namespace braid::transport {

class RttEstimator {
 public:
  /// RFC 9002 §6.2.2: before any sample, assume 333 ms.
  static constexpr Duration kInitialRtt = Duration::millis(333);
  /// RFC 9002 §6.1.2: timer granularity, 1 ms.
  static constexpr Duration kGranularity = Duration::millis(1);

  /// Feeds one sample: `latest` = ack time - send time of the largest newly
  /// acknowledged packet; `ack_delay` as reported by the peer, already capped
  /// by the caller at the peer's max_ack_delay.
  void on_sample(Duration latest, Duration ack_delay);

  bool has_sample() const { return has_sample_; }
  Duration latest() const { return latest_; }
  /// `latest` minus the ack delay (when that stays ≥ min_rtt).
  Duration latest_adjusted() const { return adjusted_; }
  Duration min() const { return has_sample_ ? min_ : kInitialRtt; }
  Duration smoothed() const { return smoothed_; }
  Duration rttvar() const { return rttvar_; }
  /// RFC 9002 §6.2.1: smoothed_rtt + max(4·rttvar, granularity) + max_ack_delay.
  Duration pto_base(Duration max_ack_delay) const;

 private:
  bool has_sample_ = false;
  Duration latest_ = kInitialRtt;
  Duration adjusted_ = kInitialRtt;
  Duration min_ = kInitialRtt;
  Duration smoothed_ = kInitialRtt;
  Duration rttvar_ = kInitialRtt / 2;
};

}  // namespace braid::transport
