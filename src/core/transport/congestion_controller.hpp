// The congestion-control interface, in the shape of QUICHE's
// SendAlgorithmInterface: event hooks that all take `now`, and two outputs —
// how many bytes may be in flight and how fast to pace them. One instance per
// lane, built by name from cc_registry.hpp; pacing is added around any
// controller by PacedController (pacer.hpp).
#pragma once

#include <memory>
#include <optional>

#include <cstdint>
#include <span>
#include <string_view>

#include "core/transport/shared_base_rtt.hpp"
#include "core/transport/shared_startup.hpp"
#include "core/units.hpp"

namespace braid::transport {

struct AckedPacket {
  uint64_t packet_number = 0;
  Bytes size;
  Time sent_time;
};

struct LostPacket {
  uint64_t packet_number = 0;
  Bytes size;
  Time sent_time;
};

/// One delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation §3):
/// data delivered over the interval between the newest acked packet's send
/// and its ack, taken the BBR way (max of send and ack intervals).
struct RateSample {
  bool valid = false;           // false when the interval was too short to trust
  bool is_app_limited = false;  // the sender had nothing to send: a lower bound only
  Rate delivery_rate;
  Bytes delivered;              // bytes delivered over `interval`
  Duration interval;
  uint64_t prior_delivered = 0; // lane's delivered count when that packet was sent
};

struct RttView {
  bool has_sample = false;    // false until the first RTT sample (then values are RFC 9002 defaults)
  bool updated = false;       // a new sample arrived with this event
  Duration latest;            // raw latest sample
  Duration latest_adjusted;   // minus the peer's ack delay (RFC 9002 §5.3)
  Duration min;
  Duration smoothed;
};

/// Everything one incoming ack taught the sender, delivered in one call.
struct CongestionEvent {
  Time now;
  Bytes prior_in_flight;           // before this ack
  Bytes in_flight;                 // after removing acked and lost packets
  std::span<const AckedPacket> acked;
  std::span<const LostPacket> lost;
  RateSample rate;
  RttView rtt;
  uint64_t total_delivered = 0;    // lane's cumulative delivered bytes
};

/// Per-lane settings a controller may use.
/// What a path carried the last time (a known peer's last transfer over
/// it): a controller may start from it instead of from ten packets.
struct StartHint {
  Rate rate;      // delivery rate it held
  Duration rtt;   // its minimum RTT
};

struct ControllerConfig {
  Bytes max_datagram_size{1200};
  /// The path's last figures, if known (`delay` starts from half its BDP).
  std::optional<StartHint> start;
  /// Shared by the lanes of one path (`delay` measures its queue against
  /// the smallest RTT any of them saw), or null: the lane's own.
  std::shared_ptr<SharedBaseRtt> shared_base;
  /// Shared by the same lanes: the first to find the pipe full ends
  /// `delay`'s startup for all of them (and later ones skip it), or null.
  std::shared_ptr<SharedStartup> shared_startup;
  uint64_t seed = 1;                            // randomised phases are still deterministic
  Duration delay_queue_target = Duration::millis(3);
  Duration background_target = Duration::millis(10);
};

class CongestionController {
 public:
  virtual ~CongestionController() = default;

  /// The registry id ("delay", "background", "reno").
  virtual std::string_view id() const = 0;

  /// A packet that counts towards bytes in flight left the sender.
  virtual void on_packet_sent(Time now, uint64_t packet_number, Bytes size,
                              Bytes prior_in_flight) = 0;
  /// Acks and losses found while processing one incoming ack (or a loss timer).
  virtual void on_congestion_event(const CongestionEvent& ev) = 0;
  /// The sender had room to send but nothing to send (RFC 9002 §7.8).
  virtual void on_app_limited(Time now, Bytes in_flight) { (void)now, (void)in_flight; }

  virtual Bytes congestion_window() const = 0;
  virtual Rate pacing_rate() const = 0;
  /// The controller's estimate of what the lane can carry (for reports).
  virtual Rate bandwidth_estimate() const { return pacing_rate(); }

  bool can_send(Bytes in_flight) const { return in_flight < congestion_window(); }
};

/// A rate that is "unlimited" for pacing purposes (1 Tbyte/s).
inline constexpr Rate kUnlimitedRate = Rate::bytes_per_sec(1e12);

/// RFC 9002 §7.7: window-based controllers pace at N·cwnd/srtt with N = 1.25.
inline Rate window_pacing_rate(Bytes cwnd, const RttView& rtt) {
  if (!rtt.has_sample) return kUnlimitedRate;
  const Duration srtt = std::max(rtt.smoothed, Duration::micros(100));
  return Rate::over(cwnd, srtt) * 1.25;
}

}  // namespace braid::transport
