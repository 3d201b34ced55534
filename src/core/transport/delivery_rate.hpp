// Delivery-rate sampling per packet, the BBR way
// (draft-cheng-iccrg-delivery-rate-estimation): each packet remembers how much
// the lane had delivered when it was sent; its ack then yields
// delivered-since / max(send interval, ack interval). Samples taken while the
// application had nothing to send are marked app-limited.
#pragma once

#include <cstdint>

#include "core/transport/congestion_controller.hpp"
#include "core/units.hpp"

namespace braid::transport {

/// The state a packet carries from send to ack.
struct DeliverySnapshot {
  uint64_t delivered = 0;
  Time delivered_time;
  Time first_sent_time;
  bool is_app_limited = false;
};

class DeliveryRateSampler {
 public:
  /// Call before sending a packet; `in_flight_before` = 0 restarts the clocks.
  DeliverySnapshot on_packet_sent(Time now, Bytes in_flight_before);

  /// Call for each newly acked packet (any order), then finish_sample() once.
  void on_packet_acked(Time now, Time sent_time, Bytes size, const DeliverySnapshot& snap);
  /// Builds the sample for this ack; `min_rtt` rejects too-short intervals.
  RateSample finish_sample(Duration min_rtt);

  /// The sender has nothing to send and room to send it: mark the bubble.
  void on_app_limited(Bytes in_flight);

  uint64_t delivered() const { return delivered_; }

 private:
  uint64_t delivered_ = 0;
  Time delivered_time_;
  Time first_sent_time_;
  uint64_t app_limited_until_ = 0;  // 0 = not app-limited

  // Per-ack accumulation.
  bool have_newest_ = false;
  uint64_t prior_delivered_ = 0;
  Time prior_time_;
  Duration send_elapsed_;
  Duration ack_elapsed_;
  bool sample_app_limited_ = false;
};

}  // namespace braid::transport
