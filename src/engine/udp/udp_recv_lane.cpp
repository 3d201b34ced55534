#include "engine/udp/udp_recv_lane.hpp"

#include "engine/udp/lane_io.hpp"

namespace braid::udp {

using transport::kAeadTagSize;

// Passes each DATA frame to the engine, then tells the core how many of
// the bytes are consumed, so the window slides (the rest: consume()).
class UdpRecvLane::Sink final : public transport::DataSink {
 public:
  Sink(UdpRecvEvents& events, transport::LaneReceiver& receiver) : events_(events), receiver_(receiver) {}
  void on_data(const transport::DataRange& range, std::span<const uint8_t> payload) override {
    const size_t now = events_.on_data(range.piece, range.offset, payload);
    if (now > 0) receiver_.on_data_consumed(Bytes(now));
  }

 private:
  UdpRecvEvents& events_;
  transport::LaneReceiver& receiver_;
};

std::unique_ptr<UdpRecvLane> UdpRecvLane::start(const UdpLaneConfig& cfg, UdpRecvEvents& events, std::string& error) {
  if (error = check_config(cfg); !error.empty()) return nullptr;
  auto port = UdpRecvPort::open(cfg.local, cfg.socket, error, true, cfg.fault);
  if (!port) return nullptr;
  if (cfg.remote.valid() && !port->socket_->connect(cfg.remote, error)) return nullptr;
  // A receiving lane only sends feedback; without a size given it allows the
  // largest (feedback packets stay far smaller).
  return make(std::move(port), cfg, cfg.packet_size ? cfg.packet_size : kMaxPacketSize, events, error);
}

std::unique_ptr<UdpRecvLane> UdpRecvLane::start_on(std::shared_ptr<UdpRecvPort> port, const UdpLaneConfig& cfg,
                                                   UdpRecvEvents& events, std::string& error) {
  UdpLaneConfig c = cfg;
  c.local = port->local_address();  // check_config wants one, of the remote's family
  if (error = check_config(c); !error.empty()) return nullptr;
  return make(std::move(port), cfg, cfg.packet_size ? cfg.packet_size : kMaxPacketSize, events, error);
}

std::unique_ptr<UdpRecvLane> UdpRecvLane::make(std::shared_ptr<UdpRecvPort> port, const UdpLaneConfig& cfg,
                                               size_t packet_size, UdpRecvEvents& events, std::string& error) {
  transport::ReceiverConfig rc;
  rc.lane_id = cfg.lane_id;
  rc.max_datagram_size = Bytes(packet_size);
  rc.ack_every = cfg.ack_every;
  std::unique_ptr<UdpRecvLane> lane(new UdpRecvLane(events, port, cfg.lane_id, packet_size, rc));
  if (!make_lane_crypto(cfg, transport::PacketKind::feedback, lane->sealer_, lane->opener_, error)) return nullptr;
  if (cfg.remote.valid()) lane->set_peer(cfg.remote);
  port->attach(lane.get());
  return lane;
}

UdpRecvLane::UdpRecvLane(UdpRecvEvents& events, std::shared_ptr<UdpRecvPort> port, uint32_t lane_id,
                         size_t packet_size, const transport::ReceiverConfig& rc)
    : events_(events),
      port_(std::move(port)),
      lane_id_(lane_id),
      packet_size_(packet_size),
      receiver_(rc),
      sink_(std::make_unique<Sink>(events, receiver_)) {}

UdpRecvLane::~UdpRecvLane() {
  close("lane destroyed");
  // make() attaches only a lane that is complete; a lane that failed before
  // never reached the port and has nothing to wait for.
  std::unique_lock lock(mu_);
  if (sealer_ && opener_) detached_cv_.wait(lock, [&] { return detached_; });
}

void UdpRecvLane::close(const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_reason_ = reason;
    stop_ = true;
  }
  port_->wake();
}

UdpLaneCounters UdpRecvLane::counters() const {
  std::lock_guard lock(counters_mu_);
  return counters_;
}

void UdpRecvLane::end(const std::string& reason) {
  if (close_reason_.empty()) close_reason_ = reason;
  stop_ = true;
}

void UdpRecvLane::set_peer(const SocketAddress& from) {
  peer_ = from;
  has_peer_ = true;
}

void UdpRecvLane::deliver(Time now, std::span<const uint8_t> packet) {
  const auto e = receiver_.on_datagram_received(now, packet, *sink_);
  if (e != transport::TransportError::ok && e != transport::TransportError::duplicate_packet) ++protocol_errors_;
}

void UdpRecvLane::consume(size_t n) {
  if (n == 0) return;
  consumed_later_.fetch_add(n, std::memory_order_relaxed);
  port_->wake();
}

bool UdpRecvLane::poll_feedback(Time now, UdpSocket& socket, TxBatch& tx, uint32_t owner) {
  if (const uint64_t later = consumed_later_.exchange(0, std::memory_order_relaxed); later > 0)
    receiver_.on_data_consumed(Bytes(later));
  if (!has_peer_ || stop_) return !stop_;
  // A connected (exclusive) socket sends to its peer without an address.
  const SocketAddress* to = socket.connected() ? nullptr : &peer_;
  for (;;) {
    std::span<uint8_t> slot = tx.next_slot();
    if (slot.empty()) {
      // Full: send what is there (the port sorts out errors) and go on.
      port_->flush();
      slot = tx.next_slot();
      if (slot.empty() || stop_) return !stop_;
    }
    slot = slot.first(std::min(slot.size(), packet_size_));
    const auto size = receiver_.poll_transmit(now, slot);
    if (!size) return true;
    if (sealer_->seal(slot, *size) != FrameStatus::ok) {
      end("the lane's key reached its usage limit (a new lane is needed)");
      return false;
    }
    socket.queue(tx, *size + kAeadTagSize, to, owner);
  }
}

void UdpRecvLane::publish_counters() {
  UdpLaneCounters c;
  const auto& s = receiver_.stats();
  c.packets_received = s.packets_received;
  c.duplicate_packets = s.duplicate_packets;
  c.data_bytes_received = s.data_bytes_received;
  c.feedback_packets_sent = s.feedback_packets_sent;
  c.protocol_errors = protocol_errors_;
  using security::FrameStatus;
  c.rejected_forged = opener_->count(FrameStatus::forged);
  c.rejected_replayed = opener_->count(FrameStatus::replayed);
  c.rejected_too_old = opener_->count(FrameStatus::too_old);
  c.rejected_other = opener_->rejected() - c.rejected_forged - c.rejected_replayed - c.rejected_too_old;
  if (port_->exclusive()) {
    // A port of its own: whatever reached it was meant for this lane (as its
    // own socket's datagrams were before ports were shared).
    const UdpPortStats p = port_->stats();
    c.rejected_other += p.malformed + p.unknown_lane + p.foreign_source;
  }
  // On a shared port the socket's counts and the thread's CPU time are the
  // port's (every lane on it), not this lane's alone.
  c.socket = port_->socket_stats();
  c.gso = port_->gso();
  c.gro = port_->gro();
  c.io_thread_cpu_seconds = IoWaiter::thread_cpu_seconds();
  std::lock_guard lock(counters_mu_);
  counters_ = c;
}

void UdpRecvLane::finish() {
  publish_counters();
  {
    std::lock_guard lock(mu_);
    if (close_reason_.empty()) close_reason_ = stop_reason_.empty() ? "closed" : stop_reason_;
  }
  stopped_ = true;
  events_.on_closed(close_reason_);
  std::lock_guard lock(mu_);
  detached_ = true;
  detached_cv_.notify_all();
}

}  // namespace braid::udp
