#include "engine/udp/udp_send_lane.hpp"

#include <cerrno>
#include <cstdio>

#include "core/transport/cc_registry.hpp"
#include "engine/udp/lane_limits_controller.hpp"

namespace braid::udp {

using transport::kAeadTagSize;

namespace {
// Data ranges handed to the core: DataRange::length is 32-bit.
constexpr uint64_t kMaxRange = uint64_t{1} << 30;

// A lane's cap counts what the network carries (SetLaneRate: IP and
// transport headers in); the pacer counts datagrams, each of which costs
// its IP and UDP headers more on the interface.
std::optional<Rate> datagram_rate(std::optional<Rate> on_wire, const LaneIo& io) {
  if (!on_wire) return on_wire;
  const double p = static_cast<double>(io.packet_size);
  return *on_wire * (p / (p + static_cast<double>(io.ip_udp_headers)));
}
}  // namespace

std::unique_ptr<UdpSendLane> UdpSendLane::start(const UdpLaneConfig& cfg, UdpSendEvents& events,
                                                std::string& error) {
  if (!cfg.remote.valid()) {
    error = "a sending UDP lane needs the peer's address";
    return nullptr;
  }
  auto io = LaneIo::create(cfg, transport::PacketKind::data, error);
  if (!io) return nullptr;
  transport::SenderConfig sc;
  sc.lane_id = cfg.lane_id;
  sc.max_datagram_size = Bytes(io->packet_size);
  sc.cc.max_datagram_size = sc.max_datagram_size;
  sc.cc.seed = cfg.cc_seed;
  sc.cc.start = cfg.start;
  sc.cc.shared_base = cfg.shared_base;
  sc.cc.shared_startup = cfg.shared_startup;
  sc.pacer.burst_time = cfg.pacer_burst;
  sc.pacer.wake_time = cfg.pacer_wake;
  auto cc = transport::make_controller(cfg.cc, sc.cc);
  if (!cc) {
    error = "unknown congestion controller '" + cfg.cc + "'";
    return nullptr;
  }
  auto limited =
      std::make_unique<LaneLimitsController>(std::move(cc), LaneLimits{datagram_rate(cfg.rate_limit, *io), cfg.io_reaction});
  LaneLimitsController* limits = limited.get();
  auto sender = std::make_unique<transport::LaneSender>(sc, std::move(limited));
  std::unique_ptr<UdpSendLane> lane(
      new UdpSendLane(events, std::move(io), std::move(sender), cfg.idle_timeout, cfg.first_contact_timeout));
  lane->limits_ = limits;
  lane->thread_ = std::thread([l = lane.get()] { l->run(); });
  return lane;
}

UdpSendLane::UdpSendLane(UdpSendEvents& events, std::unique_ptr<LaneIo> io,
                         std::unique_ptr<transport::LaneSender> sender, Duration idle_timeout,
                         Duration first_contact_timeout)
    : events_(events),
      io_(std::move(io)),
      sender_(std::move(sender)),
      idle_timeout_(idle_timeout),
      first_contact_timeout_(first_contact_timeout),
      local_(io_->socket->local_address()) {
  inbox_.reserve(64);
  work_.reserve(64);
}

UdpSendLane::~UdpSendLane() { stop(); }

void UdpSendLane::stop(const std::string& reason) {
  close(reason);
  if (thread_.joinable()) thread_.join();
}

void UdpSendLane::send_piece(uint64_t piece, uint64_t offset, uint64_t length, std::shared_ptr<const uint8_t> bytes) {
  {
    std::lock_guard lock(mu_);
    inbox_.push_back(Command{Command::Kind::send, piece, offset, length, std::move(bytes), std::nullopt});
    has_commands_ = true;
  }
  io_->waiter.wake();
}

void UdpSendLane::cancel_piece(uint64_t piece) {
  {
    std::lock_guard lock(mu_);
    inbox_.push_back(Command{Command::Kind::cancel, piece, 0, 0, nullptr, std::nullopt});
    has_commands_ = true;
  }
  io_->waiter.wake();
}

void UdpSendLane::set_rate_limit(std::optional<Rate> rate) {
  {
    std::lock_guard lock(mu_);
    Command c{Command::Kind::rate, 0, 0, 0, nullptr, std::nullopt};
    c.rate = datagram_rate(rate, *io_);
    inbox_.push_back(std::move(c));
    has_commands_ = true;
  }
  io_->waiter.wake();
}

void UdpSendLane::close(const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_reason_ = reason;
    stop_ = true;
  }
  io_->waiter.wake();
}

UdpLaneCounters UdpSendLane::counters() const {
  std::lock_guard lock(counters_mu_);
  return counters_;
}

void UdpSendLane::apply_commands() {
  {
    std::lock_guard lock(mu_);
    work_.swap(inbox_);
    has_commands_ = false;
  }
  for (Command& c : work_) {
    if (c.kind == Command::Kind::rate) {
      limits_->set_rate_cap(c.rate);
      continue;
    }
    if (c.kind == Command::Kind::cancel) {
      sender_->cancel_piece(c.piece);
      ledger_.remove(c.piece);
      continue;
    }
    if (c.length == 0) {  // nothing to carry: delivered as soon as asked
      ++pieces_acked_;
      events_.on_piece_acked(c.piece);
      continue;
    }
    if (!ledger_.add(c.piece, c.offset, c.length, std::move(c.bytes))) continue;  // already here
    for (uint64_t at = 0; at < c.length; at += kMaxRange) {
      const auto len = static_cast<uint32_t>(std::min(kMaxRange, c.length - at));
      sender_->enqueue(transport::DataRange{c.piece, c.offset + at, len});
    }
  }
  work_.clear();
}

bool UdpSendLane::receive() {
  // A few batches, then back to sending: under a steady stream of acks the
  // socket is never empty, and the pacer must not wait for it to be.
  for (int batch = 0; batch < kMaxReceiveBatches; ++batch) {
    const int got = io_->socket->receive(*io_->rx);
    if (got < 0) {
      end(socket_error_reason(-got));
      return false;
    }
    if (got == 0) return true;
    // The acks' arrival time is now, not when the loop began: a stale time
    // makes every RTT sample short, and the controller then reads the true
    // RTT as a standing queue and drains for ever.
    const Time now = io_->clock.now();
    io_->rx->for_each([&](std::span<uint8_t> d, const SocketAddress&) {
      if (io_->opener->open(d) != FrameStatus::ok) return;  // counted by the opener; the lane goes on
      last_heard_ = now;
      heard_peer_.store(true, std::memory_order_relaxed);
      if (sender_->on_datagram_received(now, d.first(d.size() - kAeadTagSize)) != transport::TransportError::ok) {
        ++protocol_errors_;  // authentic yet malformed: a peer bug, not an attack; keep going
        return;
      }
      for (const transport::DataRange& r : sender_->acked_data()) {
        if (ledger_.on_acked(r)) {
          ++pieces_acked_;
          events_.on_piece_acked(r.piece);
        }
      }
    });
  }
  return true;
}

bool UdpSendLane::transmit(Time now, bool& blocked) {
  TxBatch& tx = *io_->tx;
  blocked = false;
  // Sends what is pending; false when the batch could not go out.
  const auto flush = [&]() {
    const int rc = io_->socket->flush(tx);
    if (rc == EAGAIN) blocked = true;  // socket buffer full: wait for POLLOUT, keep the rest
    else if (rc != 0) end(socket_error_reason(rc));
    return rc == 0;
  };
  if (!tx.empty() && !flush()) return !stop_;  // left over from a full socket buffer
  for (;;) {
    if (tx.full() && !flush()) return !stop_;
    const std::span<uint8_t> slot = tx.next_slot();
    const uint64_t resent_before = sender_->stats().data_bytes_retransmitted;
    const auto t = sender_->poll_transmit(now, slot);
    if (!t) break;
    // The payloads are sealed from the held piece straight into the slot.
    std::array<DatagramSealer::Gathered, transport::kMaxDataFramesPerPacket> gathered;
    for (size_t i = 0; i < t->payload_count; ++i) {
      const transport::PayloadSlot& p = t->payloads[i];
      if (ledger_.mark_started(p.range.piece)) events_.on_piece_started(p.range.piece);
      const uint8_t* bytes = ledger_.bytes_of(p.range);
      if (!bytes) {
        end("internal error: the core asked for bytes of piece " + std::to_string(p.range.piece) +
            " the lane does not hold");
        return false;
      }
      gathered[i] = {p.offset_in_packet, std::span<const uint8_t>(bytes, p.range.length)};
    }
    packets_retransmitted_ += sender_->stats().data_bytes_retransmitted != resent_before;
    if (const FrameStatus s = io_->sealer->seal(slot, t->size, std::span(gathered.data(), t->payload_count));
        s != FrameStatus::ok) {
      end(s == FrameStatus::key_exhausted ? "the lane's key reached its usage limit (a new lane is needed)"
                                          : "cannot seal a datagram");
      return false;
    }
    io_->socket->queue(tx, t->size + kAeadTagSize);
  }
  if (!tx.empty() && !flush()) return !stop_;
  return true;
}

void UdpSendLane::publish_counters() {
  UdpLaneCounters c;
  const auto& s = sender_->stats();
  c.packets_sent = s.packets_sent;
  c.packets_lost = s.packets_lost;
  c.packets_retransmitted = packets_retransmitted_;
  c.pto_count = s.pto_count;
  c.wire_bytes_sent = s.bytes_sent;
  c.data_bytes_sent = s.data_bytes_sent;
  c.data_bytes_retransmitted = s.data_bytes_retransmitted;
  c.data_bytes_acked = s.data_bytes_acked;
  if (sender_->rtt().has_sample()) {
    c.srtt_ms = sender_->rtt().smoothed().to_millis();
    c.min_rtt_ms = sender_->rtt().min().to_millis();
  }
  c.rate_bytes_per_sec = sender_->controller().pacing_rate().bytes_per_second();
  c.cwnd_bytes = sender_->controller().congestion_window().count();
  c.bandwidth_bytes_per_sec = sender_->controller().bandwidth_estimate().bytes_per_second();
  c.bytes_in_flight = sender_->bytes_in_flight().count();
  c.queued_bytes = sender_->queued_bytes().count();
  c.pieces_acked = pieces_acked_;
  c.protocol_errors = protocol_errors_;
  io_->fill_counters(c);
  c.io_thread_cpu_seconds = IoWaiter::thread_cpu_seconds();
  std::lock_guard lock(counters_mu_);
  counters_ = c;
}

void UdpSendLane::end(const std::string& reason) {
  if (close_reason_.empty()) close_reason_ = reason;
  stop_ = true;
}

void UdpSendLane::run() {
  IoWaiter::tune_thread();
  last_heard_ = io_->clock.now();
  uint64_t loops = 0;
  Time published;
  while (!stop_) {
    if (has_commands_) apply_commands();
    if (!receive()) break;
    const Time now = io_->clock.now();
    if (sender_->poll_timeout() <= now) sender_->on_timeout(now);
    bool blocked = false;
    if (!transmit(now, blocked)) break;
    const bool heard = heard_peer_.load(std::memory_order_relaxed);
    const Duration limit = heard ? idle_timeout_ : std::min(idle_timeout_, first_contact_timeout_);
    if (sender_->bytes_in_flight().count() > 0 && now - last_heard_ > limit) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.3g s", limit.to_seconds());
      end(heard ? std::string("the peer was silent for ") + secs
                : std::string("no answer over UDP in ") + secs + " (UDP blocked on the path?)");
      break;
    }
    // Counters feed reports and the scheduler's view of the controller
    // (room to fill): refresh them every few loops, and at least every 5 ms
    // when loops are rare (start-up, low rates).
    if ((++loops & 15) == 0 || now - published >= Duration::millis(5)) {
      publish_counters();
      published = now;
    }
    // A full socket buffer drains in microseconds; look again within 1 ms
    // even if POLLOUT does not come, so timers still run.
    io_->waiter.wait(io_->socket->fd(), blocked, blocked ? now + Duration::millis(1) : sender_->poll_timeout(),
                     io_->clock);
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
