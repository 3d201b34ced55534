#include "link_direction.hpp"

#include <algorithm>
#include <cmath>

namespace netlab {

LinkDirection::LinkDirection(DirectionParams params, std::uint64_t seed, std::uint64_t max_packet_bytes)
    : params_(params), rng_(seed), max_packet_bytes_(max_packet_bytes) {}

void LinkDirection::handle_packet(Packet packet, TimePoint now) {
  advance(now);
  counters_.rx_packets += packet.wire_packets;
  counters_.rx_bytes += packet.wire_bytes;
  if (dark_) {
    counters_.drop_outage += packet.wire_packets;
    return;
  }
  if (!admits(packet)) {
    counters_.drop_queue += packet.wire_packets;
    return;
  }
  max_packet_bytes_ = std::max<std::uint64_t>(max_packet_bytes_, packet.wire_bytes);
  counters_.queue_bytes += packet.wire_bytes;
  counters_.queue_packets += packet.wire_packets;
  counters_.queue_hwm_bytes = std::max(counters_.queue_hwm_bytes, counters_.queue_bytes);
  counters_.queue_hwm_packets = std::max(counters_.queue_hwm_packets, counters_.queue_packets);
  queue_.push_back({now, std::move(packet)});
  advance(now);  // an idle link starts sending at once
}

bool LinkDirection::admits(const Packet& p) const {
  if (queue_.empty()) return true;
  switch (params_.queue.unit) {
    case QueueLimit::Unit::packets:
      return counters_.queue_packets + p.wire_packets <= params_.queue.amount;
    case QueueLimit::Unit::bytes:
      return counters_.queue_bytes + p.wire_bytes <= params_.queue.amount;
    case QueueLimit::Unit::time:
      return counters_.queue_bytes + p.wire_bytes <= params_.rate.bytes_in(params_.queue.time);
  }
  return true;
}

void LinkDirection::handle_patch(const DirectionPatch& patch, TimePoint now) {
  advance(now);  // what was sent before `now` was sent under the old settings
  const Duration old_jitter = params_.jitter;
  patch.apply_to(params_);
  if (params_.jitter != old_jitter) jitter_.reset();
  if (patch.dark && *patch.dark && !dark_) go_dark(now);
  if (patch.dark && !*patch.dark && dark_) {
    dark_ = false;
    link_free_at_ = std::max(link_free_at_, now);
  }
}

void LinkDirection::go_dark(TimePoint now) {
  dark_ = true;
  for (const auto& q : queue_) counters_.drop_outage += q.packet.wire_packets;
  queue_.clear();
  // Packets due by `now` have arrived (the caller just has not collected
  // them yet); only those still on their way are lost.
  std::deque<InFlight> arrived;
  for (auto& f : pipe_) {
    if (f.deliver_at <= now) arrived.push_back(std::move(f));
    else counters_.drop_outage += f.packet.wire_packets;
  }
  pipe_ = std::move(arrived);
  counters_.queue_bytes = counters_.queue_packets = 0;
  codel_.on_empty();
}

std::optional<Packet> LinkDirection::dequeue_for_transmission(TimePoint start) {
  while (!queue_.empty()) {
    Queued head = std::move(queue_.front());
    queue_.pop_front();
    counters_.queue_bytes -= head.packet.wire_bytes;
    counters_.queue_packets -= head.packet.wire_packets;
    if (params_.codel.enabled &&
        codel_.should_drop(start, start - head.enqueued, counters_.queue_bytes, max_packet_bytes_, params_.codel)) {
      counters_.drop_codel += head.packet.wire_packets;
      continue;  // a dropped packet takes no link time: try the next at once
    }
    return std::move(head.packet);
  }
  return std::nullopt;
}

bool LinkDirection::lost(const Packet& p) {
  if (params_.loss <= 0) return false;
  bool any = false;
  for (std::uint32_t i = 0; i < p.wire_packets; ++i) any |= rng_.uniform() < params_.loss;
  return any;
}

Duration LinkDirection::draw_jitter_offset() {
  const double offset = (2.0 * rng_.uniform() - 1.0) * static_cast<double>(params_.jitter.count());
  return Duration{static_cast<Duration::rep>(std::llround(offset))};
}

Duration LinkDirection::delay_at(TimePoint t) {
  if (params_.jitter.count() == 0) return params_.delay;
  // Points 4 x jitter apart, at most 2 x jitter different: slope <= 1/2.
  const Duration step = 4 * params_.jitter;
  if (!jitter_ || t >= jitter_->to_time + step) {
    jitter_ = JitterSegment{t, t + step, draw_jitter_offset(), draw_jitter_offset()};  // after idle: start afresh
  }
  while (t >= jitter_->to_time) {
    jitter_ = JitterSegment{jitter_->to_time, jitter_->to_time + step, jitter_->to_offset, draw_jitter_offset()};
  }
  const double progress = static_cast<double>((t - jitter_->from_time).count()) / static_cast<double>(step.count());
  const double offset = static_cast<double>(jitter_->from_offset.count()) +
                        progress * static_cast<double>((jitter_->to_offset - jitter_->from_offset).count());
  return std::max(params_.delay + Duration{static_cast<Duration::rep>(std::llround(offset))}, Duration{0});
}

void LinkDirection::advance(TimePoint now) {
  now = std::max(now, last_now_);  // a caller bug must not run time backwards
  last_now_ = now;
  while (!queue_.empty() && link_free_at_ <= now) {
    const TimePoint start = std::max(link_free_at_, queue_.front().enqueued);
    std::optional<Packet> p = dequeue_for_transmission(start);
    if (!p) break;
    const TimePoint finish = start + params_.rate.transfer_time(p->wire_bytes);
    link_free_at_ = finish;
    if (lost(*p)) {
      counters_.drop_loss += p->wire_packets;
      continue;
    }
    // The max() only matters when a delay change shortens the path.
    const TimePoint deliver_at = std::max(finish + delay_at(finish), last_delivery_);
    last_delivery_ = deliver_at;
    pipe_.push_back({deliver_at, std::move(*p)});
  }
  if (queue_.empty() && link_free_at_ <= now) codel_.on_empty();
}

std::optional<Packet> LinkDirection::poll_delivery(TimePoint now) {
  advance(now);
  if (pipe_.empty() || pipe_.front().deliver_at > now) return std::nullopt;
  Packet p = std::move(pipe_.front().packet);
  p.due = pipe_.front().deliver_at;
  pipe_.pop_front();
  counters_.tx_packets += p.wire_packets;
  counters_.tx_bytes += p.wire_bytes;
  return p;
}

std::optional<TimePoint> LinkDirection::poll_timeout() const {
  std::optional<TimePoint> t;
  if (!pipe_.empty()) t = pipe_.front().deliver_at;
  if (!queue_.empty()) t = t ? std::min(*t, link_free_at_) : link_free_at_;
  return t;
}

}  // namespace netlab
