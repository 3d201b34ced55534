#include "engine/udp/udp_recv_lane.hpp"

#include <cerrno>

namespace braid::udp {

using transport::kAeadTagSize;

// Passes each DATA frame to the engine, then tells the core the bytes are
// consumed (the engine's on_data is synchronous), so the window slides.
class UdpRecvLane::Sink final : public transport::DataSink {
 public:
  Sink(UdpRecvEvents& events, transport::LaneReceiver& receiver) : events_(events), receiver_(receiver) {}
  void on_data(const transport::DataRange& range, std::span<const uint8_t> payload) override {
    events_.on_data(range.piece, range.offset, payload);
    receiver_.on_data_consumed(Bytes(payload.size()));
  }

 private:
  UdpRecvEvents& events_;
  transport::LaneReceiver& receiver_;
};

std::unique_ptr<UdpRecvLane> UdpRecvLane::start(const UdpLaneConfig& cfg, UdpRecvEvents& events, std::string& error) {
  auto io = LaneIo::create(cfg, transport::PacketKind::feedback, error);
  if (!io) return nullptr;
  transport::ReceiverConfig rc;
  rc.lane_id = cfg.lane_id;
  rc.max_datagram_size = Bytes(io->packet_size);
  rc.ack_every = cfg.ack_every;
  std::unique_ptr<UdpRecvLane> lane(new UdpRecvLane(events, std::move(io), rc));
  lane->thread_ = std::thread([l = lane.get()] { l->run(); });
  return lane;
}

UdpRecvLane::UdpRecvLane(UdpRecvEvents& events, std::unique_ptr<LaneIo> io, const transport::ReceiverConfig& rc)
    : events_(events),
      io_(std::move(io)),
      receiver_(rc),
      sink_(std::make_unique<Sink>(events, receiver_)),
      local_(io_->socket->local_address()) {}

UdpRecvLane::~UdpRecvLane() {
  close("lane destroyed");
  if (thread_.joinable()) thread_.join();
}

void UdpRecvLane::close(const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_reason_ = reason;
    stop_ = true;
  }
  io_->waiter.wake();
}

UdpLaneCounters UdpRecvLane::counters() const {
  std::lock_guard lock(counters_mu_);
  return counters_;
}

void UdpRecvLane::end(const std::string& reason) {
  if (close_reason_.empty()) close_reason_ = reason;
  stop_ = true;
}

bool UdpRecvLane::receive(Time now) {
  // One recvmmsg at a time, then feedback: acks follow each batch, so the
  // sender's RTT and rate samples stay sharp even under a flood.
  const int got = io_->socket->receive(*io_->rx);
  if (got < 0) {
    // Until the peer is known, an ICMP error belongs to nobody we know: ignore it.
    if (!io_->socket->connected()) return true;
    end(socket_error_reason(-got));
    return false;
  }
  if (got == 0) return true;
  io_->rx->for_each([&](std::span<uint8_t> d, const SocketAddress& from) {
    if (stop_ || io_->opener->open(d) != FrameStatus::ok) return;  // counted; the lane goes on
    if (!io_->socket->connected()) {
      std::string error;
      if (!io_->socket->connect(from, error)) {
        end(error);
        return;
      }
    }
    const auto e = receiver_.on_datagram_received(now, d.first(d.size() - kAeadTagSize), *sink_);
    if (e != transport::TransportError::ok && e != transport::TransportError::duplicate_packet) ++protocol_errors_;
  });
  return !stop_;
}

bool UdpRecvLane::send_feedback(Time now) {
  if (!io_->socket->connected()) return true;
  TxBatch& tx = *io_->tx;
  for (;;) {
    const std::span<uint8_t> slot = tx.next_slot();
    if (slot.empty()) break;
    const auto size = receiver_.poll_transmit(now, slot);
    if (!size) break;
    if (io_->sealer->seal(slot, *size) != FrameStatus::ok) {
      end("the lane's key reached its usage limit (a new lane is needed)");
      return false;
    }
    io_->socket->queue(tx, *size + kAeadTagSize);
  }
  const int rc = io_->socket->flush(tx);
  // A full buffer drops this feedback; the core sends fresh acks soon (and
  // MAX_DATA rides on every one), so nothing waits on it.
  if (rc == EAGAIN) {
    tx.discard();
    return true;
  }
  if (rc != 0) {
    end(socket_error_reason(rc));
    return false;
  }
  return true;
}

void UdpRecvLane::publish_counters() {
  UdpLaneCounters c;
  const auto& s = receiver_.stats();
  c.packets_received = s.packets_received;
  c.duplicate_packets = s.duplicate_packets;
  c.data_bytes_received = s.data_bytes_received;
  c.feedback_packets_sent = s.feedback_packets_sent;
  c.protocol_errors = protocol_errors_;
  io_->fill_counters(c);
  c.io_thread_cpu_seconds = IoWaiter::thread_cpu_seconds();
  std::lock_guard lock(counters_mu_);
  counters_ = c;
}

void UdpRecvLane::run() {
  IoWaiter::tune_thread();
  uint64_t loops = 0;
  while (!stop_) {
    Time now = io_->clock.now();
    if (!receive(now)) break;
    now = io_->clock.now();
    receiver_.on_timeout(now);
    if (!send_feedback(now)) break;
    if ((++loops & 15) == 0) publish_counters();
    io_->waiter.wait(io_->socket->fd(), false, receiver_.poll_timeout(), io_->clock);
  }
  publish_counters();
  {
    std::lock_guard lock(mu_);
    if (close_reason_.empty()) close_reason_ = stop_reason_.empty() ? "closed" : stop_reason_;
  }
  stopped_ = true;
  events_.on_closed(close_reason_);
}

}  // namespace braid::udp
