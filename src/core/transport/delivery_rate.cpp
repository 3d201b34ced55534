#include "core/transport/delivery_rate.hpp"

#include <algorithm>

namespace braid::transport {

DeliverySnapshot DeliveryRateSampler::on_packet_sent(Time now, Bytes in_flight_before) {
  if (in_flight_before.count() == 0) {
    // Nothing in flight: the next interval starts now, not at the last ack.
    first_sent_time_ = now;
    delivered_time_ = now;
  }
  return DeliverySnapshot{delivered_, delivered_time_, first_sent_time_, app_limited_until_ != 0};
}

void DeliveryRateSampler::on_packet_acked(Time now, Time sent_time, Bytes size,
                                          const DeliverySnapshot& snap) {
  delivered_ += size.count();
  delivered_time_ = now;
  // The most recently sent packet among those acked defines the interval.
  if (!have_newest_ || snap.delivered > prior_delivered_ ||
      (snap.delivered == prior_delivered_ && sent_time - snap.first_sent_time > send_elapsed_)) {
    have_newest_ = true;
    prior_delivered_ = snap.delivered;
    prior_time_ = snap.delivered_time;
    sample_app_limited_ = snap.is_app_limited;
    send_elapsed_ = sent_time - snap.first_sent_time;
    ack_elapsed_ = now - snap.delivered_time;
    first_sent_time_ = sent_time;
  }
}

RateSample DeliveryRateSampler::finish_sample(Duration min_rtt) {
  RateSample rs;
  if (!have_newest_) return rs;
  have_newest_ = false;
  if (app_limited_until_ != 0 && delivered_ > app_limited_until_) app_limited_until_ = 0;
  rs.prior_delivered = prior_delivered_;
  rs.is_app_limited = sample_app_limited_;
  rs.delivered = Bytes(delivered_ - prior_delivered_);
  rs.interval = std::max(send_elapsed_, ack_elapsed_);
  // An interval shorter than min_rtt would overstate the rate (ack compression).
  if (rs.interval < min_rtt || rs.interval.ns() <= 0) return rs;
  rs.delivery_rate = Rate::over(rs.delivered, rs.interval);
  rs.valid = true;
  return rs;
}

void DeliveryRateSampler::on_app_limited(Bytes in_flight) {
  app_limited_until_ = std::max<uint64_t>(delivered_ + in_flight.count(), 1);
}

}  // namespace braid::transport
