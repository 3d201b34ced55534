#include "core/transport/sim/bottleneck_link.hpp"

#include <algorithm>

namespace braid::transport::sim {

BottleneckLink::BottleneckLink(const LinkConfig& cfg) : cfg_(cfg), rng_(cfg.seed * 2654435761ULL + 7) {}

double BottleneckLink::uniform() {
  // splitmix64: deterministic per seed, independent of the standard library.
  uint64_t z = (rng_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
}

void BottleneckLink::expire_queue(Time now) {
  while (!queue_.empty() && queue_.front().finish <= now) {
    queued_ -= queue_.front().size;
    queue_.pop_front();
  }
}

bool BottleneckLink::send(Time now, SimPacket&& packet) {
  ++stats_.packets_in;
  expire_queue(now);
  const int flow = packet.flow;
  auto drop = [&](uint64_t& counter) {
    ++counter;
    stats_.bytes_dropped += packet.size;
    if (flow >= 0) {
      if (dropped_by_flow_.size() <= static_cast<size_t>(flow)) dropped_by_flow_.resize(flow + 1);
      dropped_by_flow_[flow] += packet.size;
    }
    return false;
  };
  if (cfg_.loss > 0 && uniform() < cfg_.loss) return drop(stats_.dropped_random);
  if (queued_ + packet.size > cfg_.queue_limit.count()) return drop(stats_.dropped_queue);
  const Time start = after_pause(std::max(now, last_finish_));
  const Time finish = start + cfg_.rate.transfer_time(Bytes(packet.size));
  last_finish_ = finish;
  queue_.push_back({finish, packet.size});
  queued_ += packet.size;
  Time arrival = finish + cfg_.one_way_delay;
  if (cfg_.jitter > Duration::zero()) arrival = std::max(arrival + cfg_.jitter * uniform(), last_arrival_);
  last_arrival_ = arrival;
  wire_.push_back({arrival, std::move(packet)});
  return true;
}

Time BottleneckLink::after_pause(Time t) const {
  if (cfg_.pause_every <= Duration::zero() || cfg_.pause_for <= Duration::zero()) return t;
  const int64_t into = t.ns() % cfg_.pause_every.ns();
  return into < cfg_.pause_for.ns() ? t + Duration::nanos(cfg_.pause_for.ns() - into) : t;
}

Time BottleneckLink::next_arrival() const {
  return wire_.empty() ? Time::never() : wire_.front().arrival;
}

std::optional<SimPacket> BottleneckLink::receive(Time now) {
  if (wire_.empty() || wire_.front().arrival > now) return std::nullopt;
  SimPacket p = std::move(wire_.front().packet);
  wire_.pop_front();
  stats_.bytes_delivered += p.size;
  return p;
}

Bytes BottleneckLink::queued_bytes(Time now) {
  expire_queue(now);
  return Bytes(queued_);
}

Duration BottleneckLink::queue_delay(Time now) {
  expire_queue(now);
  if (queue_.empty()) return Duration::zero();
  return last_finish_ - now;
}

uint64_t BottleneckLink::bytes_dropped_for(int flow) const {
  return static_cast<size_t>(flow) < dropped_by_flow_.size() ? dropped_by_flow_[flow] : 0;
}

}  // namespace braid::transport::sim
