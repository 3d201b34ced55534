#include "core/transport/reno_controller.hpp"

#include <algorithm>
#include <limits>

namespace braid::transport {

namespace {
// RFC 9002 §7.2: initial window 10 datagrams, minimum window 2 datagrams.
constexpr uint64_t kInitialWindowPackets = 10;
constexpr uint64_t kMinimumWindowPackets = 2;
// RFC 9002 §7.3.2: kLossReductionFactor = 0.5.
constexpr double kLossReductionFactor = 0.5;
}  // namespace

RenoController::RenoController(const ControllerConfig& cfg)
    : mss_(cfg.max_datagram_size),
      cwnd_(Bytes(kInitialWindowPackets * cfg.max_datagram_size.count())),
      ssthresh_(Bytes(std::numeric_limits<uint64_t>::max() / 2)) {}

void RenoController::on_packet_sent(Time, uint64_t, Bytes, Bytes) {}

void RenoController::on_congestion_event(const CongestionEvent& ev) {
  for (const auto& a : ev.acked) {
    // Packets sent before the current recovery period do not grow the window.
    if (in_recovery_ever_ && a.sent_time <= recovery_start_) continue;
    if (cwnd_ < ssthresh_) {
      cwnd_ += a.size;
    } else {
      cwnd_ += Bytes(mss_.count() * a.size.count() / std::max<uint64_t>(cwnd_.count(), 1));
    }
  }
  if (!ev.lost.empty()) {
    Time newest_lost = ev.lost.front().sent_time;
    for (const auto& l : ev.lost) newest_lost = std::max(newest_lost, l.sent_time);
    if (!in_recovery_ever_ || newest_lost > recovery_start_) {
      in_recovery_ever_ = true;
      recovery_start_ = ev.now;
      const uint64_t halved = static_cast<uint64_t>(cwnd_.as_double() * kLossReductionFactor);
      cwnd_ = Bytes(std::max(halved, kMinimumWindowPackets * mss_.count()));
      ssthresh_ = cwnd_;
    }
  }
  pacing_ = window_pacing_rate(cwnd_, ev.rtt);
}

}  // namespace braid::transport
