#include "sim/sim_lane.hpp"

#include <algorithm>
#include <cmath>

namespace braid::sim {

// Slow start in continuous time: the window W (bytes per RTT) grows by
// ln 2 per byte sent, so it doubles every RTT the lane is busy; the lane moves
// W / RTT bytes a second, capped at its rate once W reaches the BDP.
namespace {
constexpr double kGrowth = 0.6931471805599453;  // ln 2
}

SimLane::SimLane(const LaneSpec& spec, uint64_t seed)
    : spec_(spec), rng_(seed), rate_(spec.rate), one_way_(spec.rtt / 2.0) {
  window_ = spec.initial_window.count() > 0 ? spec.initial_window.as_double() : 1e300;
}

Rate SimLane::transport_rate() const {
  if (spec_.initial_window.count() == 0) return Rate::zero();
  if (window_ >= bdp()) return cur_rate();
  return Rate::bytes_per_sec(window_ / spec_.rtt.to_seconds());
}

double SimLane::bdp() const { return cur_rate().bytes_per_second() * spec_.rtt.to_seconds(); }

Bytes SimLane::transmit_for(Duration dt) {
  const double rtt = spec_.rtt.to_seconds(), t = dt.to_seconds();
  if (window_ >= bdp() || rtt <= 0) return cur_rate().bytes_in(dt);
  const double to_cap = rtt / kGrowth * std::log(bdp() / window_);
  if (t <= to_cap) {
    const double w = window_ * std::exp(kGrowth * t / rtt);
    const double moved = (w - window_) / kGrowth;
    window_ = w;
    return Bytes(static_cast<uint64_t>(moved));
  }
  const double moved = (bdp() - window_) / kGrowth + cur_rate().bytes_per_second() * (t - to_cap);
  window_ = bdp();
  return Bytes(static_cast<uint64_t>(moved));
}

Duration SimLane::time_for(Bytes bytes) const {
  const double rtt = spec_.rtt.to_seconds(), b = bytes.as_double();
  if (window_ >= bdp() || rtt <= 0) return cur_rate().transfer_time(bytes);
  const double below_cap = (bdp() - window_) / kGrowth;  // bytes sent before the window carries the rate
  if (b <= below_cap) return Duration::seconds_f(rtt / kGrowth * std::log((window_ + kGrowth * b) / window_));
  return Duration::seconds_f(rtt / kGrowth * std::log(bdp() / window_) + (b - below_cap) / cur_rate().bytes_per_second());
}

void SimLane::advance(Time now) {
  if (transmitting_ && up() && !queue_.empty()) {
    const Bytes moved = transmit_for(now - last_advance_);
    Queued& head = queue_.front();
    head.sent = std::min(head.length, head.sent + moved);
  }
  last_advance_ = now;
}

std::optional<SimLane::Started> SimLane::start_head(Time now) {
  if (transmitting_ || queue_.empty() || !up()) return std::nullopt;
  transmitting_ = true;
  tx_started_ = now;
  if (spec_.rate_noise > 0) factor_ = 1.0 + spec_.rate_noise * (2.0 * rng_.uniform() - 1.0);
  last_advance_ = now;
  return Started{queue_.front().piece};
}

void SimLane::update_writes(Time now, std::vector<Written>& written) {
  // A write completes once everything up to its last byte fits in the send buffer.
  Bytes backlog;
  for (auto& q : queue_) {
    backlog += q.length - q.sent;
    if (q.written) continue;
    if (backlog > spec_.sndbuf) break;
    q.written = true;
    written.push_back({q.piece, now});
  }
}

std::optional<SimLane::Started> SimLane::enqueue(core::PieceId piece, Bytes length, Time now,
                                                 std::vector<Written>& written) {
  advance(now);
  queue_.push_back({piece, length, Bytes(0), false});
  update_writes(now, written);
  return start_head(now);
}

std::optional<SimLane::Started> SimLane::cancel(core::PieceId piece, Time now) {
  advance(now);
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->piece != piece) continue;
    const bool on_wire = it == queue_.begin() && transmitting_;
    if (on_wire) {
      wasted_ += it->sent;
      transmitting_ = false;
    }
    queue_.erase(it);
    return on_wire ? start_head(now) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<Time> SimLane::next_tx_done() const {
  if (!transmitting_ || !up() || queue_.empty()) return std::nullopt;
  const Queued& head = queue_.front();
  return last_advance_ + time_for(head.length - head.sent);
}

SimLane::Transmitted SimLane::finish_tx(Time now, std::optional<Started>& next_started,
                                        std::vector<Written>& written) {
  advance(now);
  const Queued head = queue_.front();
  queue_.pop_front();
  transmitting_ = false;
  wire_ += head.length;
  const bool lost = spec_.loss > 0 && rng_.uniform() < spec_.loss;
  // The receiver sees the first byte one propagation delay after it left and
  // the last byte one propagation delay after it left: the same span — less
  // the first frame's, if it sees the piece only frame by frame.
  Duration recv = now - tx_started_;
  if (spec_.frame.count() > 0)
    recv = recv * (static_cast<double>((head.length - spec_.frame).count()) / head.length.as_double());
  Transmitted t{head.piece, arrival_time(now, true), recv, lost};
  update_writes(now, written);
  next_started = start_head(now);
  return t;
}

Time SimLane::arrival_time(Time leaves, bool forward) {
  Duration d = one_way_;
  if (spec_.jitter > Duration::zero()) d += spec_.jitter * rng_.uniform();
  Time& last = forward ? last_arrival_fwd_ : last_arrival_back_;
  // A lane is an ordered byte stream: nothing overtakes what left before it.
  last = std::max(last, leaves + d);
  return last;
}

bool SimLane::ack_lost() { return spec_.ack_loss > 0 && rng_.uniform() < spec_.ack_loss; }

void SimLane::set_rate(Rate r, Time now) {
  advance(now);
  rate_ = r;
}

void SimLane::set_down(Time now) {
  advance(now);
  up_ = false;
}

std::optional<SimLane::Started> SimLane::set_up(Time now) {
  up_ = true;
  up_since_ = now;
  last_advance_ = now;
  if (transmitting_) return std::nullopt;  // the paused piece simply resumes
  return start_head(now);
}

void SimLane::set_gone(Time now) {
  advance(now);
  for (const auto& q : queue_) wasted_ += q.sent;
  queue_.clear();
  transmitting_ = false;
  gone_ = true;
}

}  // namespace braid::sim
