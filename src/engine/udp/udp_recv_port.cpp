#include "engine/udp/udp_recv_port.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/transport/wire.hpp"
#include "engine/udp/lane_io.hpp"
#include "engine/udp/udp_recv_lane.hpp"

namespace braid::udp {

using transport::kAeadTagSize;
using transport::kHeaderSize;

namespace {

// The clear header of a data packet (wire.hpp): 0x40 | kind 0, lane id at
// bytes 1-4, big-endian. Anything else is not for a receiving lane.
bool is_data_packet(std::span<const uint8_t> d) {
  return d.size() >= kHeaderSize + kAeadTagSize && d[0] == (0x40 | static_cast<uint8_t>(transport::PacketKind::data));
}

uint32_t lane_id_of(std::span<const uint8_t> d) {
  return (uint32_t{d[1]} << 24) | (uint32_t{d[2]} << 16) | (uint32_t{d[3]} << 8) | d[4];
}

}  // namespace

std::shared_ptr<UdpRecvPort> UdpRecvPort::open(const SocketAddress& local, const SocketOptions& opts,
                                               std::string& error, bool exclusive, FaultInjection fault) {
  std::shared_ptr<UdpRecvPort> p(new UdpRecvPort());
  if (!p->waiter_.valid()) {
    error = std::string("cannot create an eventfd: ") + std::strerror(errno);
    return nullptr;
  }
  p->socket_ = UdpSocket::open(local, nullptr, opts, error);
  if (!p->socket_) return nullptr;
  p->socket_->set_fault_injection(std::move(fault));
  p->local_ = p->socket_->local_address();
  p->exclusive_ = exclusive;
  p->tx_ = std::make_unique<TxBatch>(kTxBatchSlots, kMaxPacketSize);
  // With GRO one buffer takes a whole coalesced run (up to 64 KiB); without
  // it, one datagram each, so take more of them per call.
  if (p->socket_->gro())
    p->rx_ = std::make_unique<RxBatch>(16, 65536);
  else
    p->rx_ = std::make_unique<RxBatch>(64, kMaxPacketSize);
  p->scratch_.resize(65536);
  p->thread_ = std::thread([raw = p.get()] { raw->run(); });
  return p;
}

UdpRecvPort::~UdpRecvPort() {
  // Every lane holds the port, so none is left here.
  stop_ = true;
  waiter_.wake();
  if (thread_.joinable()) thread_.join();
}

UdpPortStats UdpRecvPort::stats() const {
  UdpPortStats s;
  s.migrated = migrated_.load(std::memory_order_relaxed);
  s.malformed = malformed_.load(std::memory_order_relaxed);
  s.unknown_lane = unknown_lane_.load(std::memory_order_relaxed);
  s.foreign_source = foreign_source_.load(std::memory_order_relaxed);
  s.unauthenticated = unauthenticated_.load(std::memory_order_relaxed);
  return s;
}

void UdpRecvPort::attach(UdpRecvLane* lane) {
  {
    std::lock_guard lock(mu_);
    pending_.push_back(lane);
  }
  waiter_.wake();
}

void UdpRecvPort::take_new_lanes() {
  std::lock_guard lock(mu_);
  for (UdpRecvLane* l : pending_) {
    // An exclusive port connects to a peer given up front (start() did).
    lanes_.push_back(l);
  }
  pending_.clear();
}

void UdpRecvPort::receive(Time now) {
  // One recvmmsg at a time, then feedback: acks follow each batch, so the
  // senders' RTT and rate samples stay sharp even under a flood.
  const int got = socket_->receive(*rx_);
  if (got < 0) {
    // Only a connected socket hears ICMP errors, and they are about its one
    // lane's peer; an unconnected port ignores the rare transient error.
    if (socket_->connected() && !lanes_.empty()) lanes_.front()->end(socket_error_reason(-got));
    return;
  }
  if (got == 0) return;
  rx_->for_each([&](std::span<uint8_t> d, const SocketAddress& from) { dispatch(now, d, from); });
}

void UdpRecvPort::dispatch(Time now, std::span<uint8_t> d, const SocketAddress& from) {
  if (!is_data_packet(d)) {
    malformed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint32_t id = lane_id_of(d);
  const std::span<const uint8_t> packet = d.first(d.size() - kAeadTagSize);
  // 1. The lane that listens to this source (most often the last one).
  UdpRecvLane* lane = nullptr;
  if (last_ && last_->lane_id() == id && last_->has_peer() && last_->peer() == from) {
    lane = last_;
  } else {
    for (UdpRecvLane* l : lanes_)
      if (l->lane_id() == id && l->has_peer() && l->peer() == from) {
        lane = l;
        break;
      }
  }
  if (lane) {
    last_ = lane;
    if (lane->stopping()) return;
    if (lane->open(d) == FrameStatus::ok) lane->deliver(now, packet);  // else the opener counted why
    return;
  }
  // 2. The lanes with this id that wait for their peer.
  candidates_.clear();
  bool known = false;
  size_t peered = 0;  // lanes with this id that listen to another source (step 3)
  for (UdpRecvLane* l : lanes_) {
    if (l->lane_id() != id) continue;
    known = true;
    if (l->has_peer()) {
      ++peered;
    } else if (!l->stopping()) {
      candidates_.push_back(l);
    }
  }
  if (candidates_.empty()) {
    if (known && follow_peer(now, d, id, from)) return;
    (known ? foreign_source_ : unknown_lane_).fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // A failed tag check leaves the buffer half decrypted: with more than one
  // lane to try (here, or a peered one after), each tries a fresh copy. A
  // refusal is the lane's news only if it is the one lane to try.
  const bool several = candidates_.size() > 1 || peered > 0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    UdpRecvLane* l = candidates_[i];
    const std::span<uint8_t> try_on = trial_copy(d, several);
    if (l->open(try_on, !several) != FrameStatus::ok) continue;
    if (exclusive_) {
      std::string error;
      if (!socket_->connect(from, error)) {
        l->end(error);
        return;
      }
    }
    l->set_peer(from);
    last_ = l;
    l->deliver(now, try_on.first(try_on.size() - kAeadTagSize));
    return;
  }
  // Another session's lane with the same id may have moved (a lane that
  // waits forever for its peer must not keep it from following).
  if (peered > 0 && follow_peer(now, d, id, from)) return;
  unauthenticated_.fetch_add(1, std::memory_order_relaxed);
}

std::span<uint8_t> UdpRecvPort::trial_copy(std::span<uint8_t> d, bool several) {
  if (!several) return d;
  std::memcpy(scratch_.data(), d.data(), d.size());
  return std::span<uint8_t>(scratch_.data(), d.size());
}

bool UdpRecvPort::follow_peer(Time now, std::span<uint8_t> d, uint32_t id, const SocketAddress& from) {
  // A connected (exclusive) socket hears its peer only.
  if (exclusive_) return false;
  candidates_.clear();
  for (UdpRecvLane* l : lanes_)
    if (l->lane_id() == id && l->has_peer() && !l->stopping()) candidates_.push_back(l);
  const bool several = candidates_.size() > 1;
  for (UdpRecvLane* l : candidates_) {
    const std::span<uint8_t> try_on = trial_copy(d, several);
    // Not counted against the lane if it fails: the lane listens elsewhere.
    // A replay (of a datagram the lane has) fails here, so only a datagram
    // its sender sealed and the lane never saw can move it.
    const uint64_t before = l->highest_accepted();
    if (l->open(try_on, false) != FrameStatus::ok) continue;
    if (l->highest_accepted() > before) {  // the newest: the peer is there now
      l->set_peer(from);
      last_ = l;
      migrated_.fetch_add(1, std::memory_order_relaxed);
    }
    l->deliver(now, try_on.first(try_on.size() - kAeadTagSize));
    return true;
  }
  return false;
}

void UdpRecvPort::flush() {
  for (;;) {
    const int rc = socket_->flush(*tx_);
    if (rc == 0) return;
    // A full buffer drops this feedback; the cores send fresh acks soon (and
    // MAX_DATA rides on every one), so nothing waits on it.
    if (rc == EAGAIN) {
      tx_->discard();
      return;
    }
    // Any other error concerns the destination of the datagram that failed:
    // its lane ends, the others' feedback goes on.
    const uint32_t owner = tx_->head_owner();
    if (owner < lanes_.size()) lanes_[owner]->end(socket_error_reason(rc));
    tx_->drop_head_owner();
    if (tx_->empty()) {
      tx_->discard();
      return;
    }
  }
}

void UdpRecvPort::send_feedback(Time now) {
  for (uint32_t i = 0; i < lanes_.size(); ++i) {
    UdpRecvLane* l = lanes_[i];
    if (l->stopping()) continue;
    l->on_timeout(now);
    (void)l->poll_feedback(now, *socket_, *tx_, i);
  }
  if (!tx_->empty()) flush();
}

void UdpRecvPort::detach_stopped() {
  for (size_t i = 0; i < lanes_.size();) {
    UdpRecvLane* l = lanes_[i];
    if (!l->stopping()) {
      ++i;
      continue;
    }
    lanes_.erase(lanes_.begin() + static_cast<std::ptrdiff_t>(i));
    if (last_ == l) last_ = nullptr;
    l->finish();  // the handle may be gone once this returns
  }
}

void UdpRecvPort::run() {
  IoWaiter::tune_thread();
  uint64_t loops = 0;
  while (!stop_) {
    take_new_lanes();
    Time now = clock_.now();
    receive(now);
    now = clock_.now();
    send_feedback(now);
    detach_stopped();
    if ((++loops & 15) == 0)
      for (UdpRecvLane* l : lanes_) l->publish_counters();
    Time deadline = Time::never();
    for (UdpRecvLane* l : lanes_) deadline = std::min(deadline, l->poll_timeout());
    waiter_.wait(socket_->fd(), false, deadline, clock_);
  }
  // Lanes keep the port alive, so none is attached when it stops.
}

// --- the registry ---------------------------------------------------------------

std::shared_ptr<UdpRecvPort> UdpRecvPorts::get(const SocketAddress& local, std::string& error) {
  std::lock_guard lock(mu_);
  for (const auto& p : ports_)
    if (p->local_address() == local) return p;
  auto p = UdpRecvPort::open(local, opts_, error);
  if (p) ports_.push_back(p);
  return p;
}

std::vector<std::shared_ptr<UdpRecvPort>> UdpRecvPorts::all() const {
  std::lock_guard lock(mu_);
  return ports_;
}

}  // namespace braid::udp
