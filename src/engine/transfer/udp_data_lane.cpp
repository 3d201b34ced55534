#include "engine/transfer/udp_data_lane.hpp"

#include "engine/files/piece_hasher.hpp"

namespace braid::transfer {

std::unique_ptr<UdpDataLane> UdpDataLane::start(const udp::UdpLaneConfig& cfg, DataLaneEvents& events,
                                                std::string& error, std::shared_ptr<PieceBuffers> buffers) {
  // The lane object must exist before its thread can call events on it.
  std::unique_ptr<UdpDataLane> lane(new UdpDataLane(cfg.lane_id, cfg.remote.str(), events));
  lane->interface_ = cfg.socket.device;
  lane->buffers_ = buffers ? std::move(buffers) : PieceBuffers::make();
  auto udp = udp::UdpSendLane::start(cfg, *lane, error);
  if (!udp) return nullptr;
  {
    std::lock_guard lock(lane->mu_);
    lane->udp_ = std::move(udp);
  }
  lane->feeder_ = std::thread([l = lane.get()] { l->feeder_loop(); });
  return lane;
}

UdpDataLane::UdpDataLane(LaneNo id, std::string remote, DataLaneEvents& events)
    : id_(id), remote_(std::move(remote)), events_(events) {}

UdpDataLane::~UdpDataLane() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    cv_.notify_all();
  }
  if (feeder_.joinable()) feeder_.join();
  // The I/O thread's events (an ack's rate report, on_closed) read udp_:
  // end the thread while udp_ still points at the lane. unique_ptr::reset
  // clears the pointer before the lane's destructor would join the thread.
  if (udp_) udp_->stop("session closed");
  udp_.reset();
}

session::LaneTraits UdpDataLane::traits() const {
  const double ms = udp_ ? udp_->counters().srtt_ms : 0;
  return session::LaneTraits::udp(ms > 0 ? std::optional(Duration::seconds_f(ms / 1000.0)) : std::nullopt);
}

std::string UdpDataLane::local() const { return udp_ ? udp_->local_address().str() : std::string(); }

void UdpDataLane::send_piece(std::shared_ptr<PieceSource> source, const core::Assign& a) {
  std::lock_guard lock(mu_);
  if (closing_) return;
  queue_.push_back(Work{std::move(source), a});
  cv_.notify_all();
}

void UdpDataLane::feeder_loop() {
  for (;;) {
    Work w;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return closing_ || !queue_.empty(); });
      if (closing_) return;
      w = std::move(queue_.front());
      queue_.pop_front();
    }
    // Read and hash the whole piece first: its header (with the hash) goes
    // ahead of its bytes, and the lane keeps the buffer for resends.
    const uint64_t len = w.a.length.count();
    std::shared_ptr<uint8_t[]> buf = buffers_->take(len);
    std::string error;
    if (!w.source->read(w.a.offset.count(), len, buf.get(), error)) {
      // A stale copy (acked on another lane, its files let go) is dropped.
      if (!w.source->released(w.a.offset.count())) events_.on_read_failed(id_, w.source->transfer_id(), error);
      continue;
    }
    files::PieceHasher hasher(w.source->hash());
    hasher.update(std::span<const uint8_t>(buf.get(), len));
    const wire::Digest hash = hasher.finish();
    const uint32_t transfer = w.source->transfer_id();
    {
      std::lock_guard lock(mu_);
      if (closing_) return;
      ready_[udp_piece_id(transfer, w.a.piece)] = Ready{buf, w.a.offset.count(), len};
    }
    events_.on_piece_hashed(id_, transfer, w.a.piece, hash);
  }
}

void UdpDataLane::release_piece(uint32_t transfer, core::PieceId piece) {
  const uint64_t pid = udp_piece_id(transfer, piece);
  Ready r;
  bool kill = false;
  {
    std::lock_guard lock(mu_);
    auto it = ready_.find(pid);
    if (it == ready_.end() || !udp_) return;
    r = std::move(it->second);
    ready_.erase(it);
    handed_[pid] = true;
    handed_bytes_ += r.length;
    kill = handed_bytes_ >= kill_after_;
  }
  udp_->send_piece(pid, r.offset, r.length, std::shared_ptr<const uint8_t>(r.bytes, r.bytes.get()));
  if (kill) udp_->close("test hook: lane killed after " + std::to_string(handed_bytes_) + " bytes");
}

void UdpDataLane::cancel_piece(uint32_t transfer, core::PieceId piece) {
  const uint64_t pid = udp_piece_id(transfer, piece);
  bool handed = false;
  {
    std::lock_guard lock(mu_);
    std::erase_if(queue_, [&](const Work& w) { return w.source->transfer_id() == transfer && w.a.piece == piece; });
    ready_.erase(pid);
    handed = handed_.erase(pid) > 0;
  }
  if (handed && udp_) udp_->cancel_piece(pid);  // posts to the lane's thread
}

void UdpDataLane::drop_transfer(uint32_t transfer) {
  std::vector<uint64_t> handed;
  {
    std::lock_guard lock(mu_);
    std::erase_if(queue_, [&](const Work& w) { return w.source->transfer_id() == transfer; });
    std::erase_if(ready_, [&](const auto& r) { return (r.first >> 32) == transfer; });
    for (auto it = handed_.begin(); it != handed_.end();) {
      if ((it->first >> 32) == transfer) {
        handed.push_back(it->first);
        it = handed_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (udp_)
    for (uint64_t pid : handed) udp_->cancel_piece(pid);  // e.g. duplicates still in flight
}

void UdpDataLane::set_rate(std::optional<Rate> rate) {
  if (udp_) udp_->set_rate_limit(rate);
}

void UdpDataLane::close(const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    cv_.notify_all();
  }
  if (udp_) udp_->close(reason);  // idempotent; only posts
}

void UdpDataLane::on_piece_started(uint64_t pid) {
  events_.on_piece_started(id_, static_cast<uint32_t>(pid >> 32), static_cast<core::PieceId>(pid & 0xffffffffu));
}

void UdpDataLane::on_piece_acked(uint64_t pid) {
  {
    std::lock_guard lock(mu_);
    handed_.erase(pid);
  }
  report_rate();
  events_.on_piece_delivered(id_, static_cast<uint32_t>(pid >> 32), static_cast<core::PieceId>(pid & 0xffffffffu));
}

// What the lane's controller measures, whenever the transport has heard new
// acks: its bottleneck estimate in file bytes (not wire bytes).
void UdpDataLane::report_rate() {
  const auto c = udp_->counters();
  if (c.data_bytes_acked == acked_seen_ || c.wire_bytes_sent == 0) return;
  acked_seen_ = c.data_bytes_acked;
  const double data_share = static_cast<double>(c.data_bytes_sent) / static_cast<double>(c.wire_bytes_sent);
  events_.on_transport_rate(id_, Rate::bytes_per_sec(c.bandwidth_bytes_per_sec * data_share));
}

void UdpDataLane::on_closed(const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    cv_.notify_all();
  }
  events_.on_closed(id_, reason, udp_ && udp_->heard_peer());
}

DataLaneCounters UdpDataLane::counters() const {
  if (!udp_) return {};
  const auto c = udp_->counters();
  return {c.wire_bytes_sent, c.rejected_total()};
}

void UdpDataLane::add_to_report(LaneReport& r) const {
  r.kind = "udp";
  if (!udp_) return;
  const auto c = udp_->counters();
  r.udp = UdpLaneReport{c.packets_sent, c.packets_lost, c.packets_retransmitted, c.data_bytes_retransmitted,
                        c.srtt_ms,      c.min_rtt_ms,   c.rate_bytes_per_sec,    c.cwnd_bytes};
}

std::optional<transport::StartHint> UdpDataLane::path_figures() const {
  if (!udp_) return std::nullopt;
  const auto c = udp_->counters();
  if (!(c.bandwidth_bytes_per_sec > 0) || !(c.min_rtt_ms > 0)) return std::nullopt;
  return transport::StartHint{Rate::bytes_per_sec(c.bandwidth_bytes_per_sec), Duration::micros(static_cast<int64_t>(c.min_rtt_ms * 1000))};
}

nlohmann::json UdpDataLane::sample() const {
  if (!udp_) return nlohmann::json::object();
  const auto c = udp_->counters();
  return {{"udp",
           {{"pacing", c.rate_bytes_per_sec},
            {"bandwidth", c.bandwidth_bytes_per_sec},
            {"cwnd", c.cwnd_bytes},
            {"in_flight", c.bytes_in_flight},
            {"queued", c.queued_bytes},
            {"srtt_ms", c.srtt_ms},
            {"acked", c.data_bytes_acked},
            {"lost", c.packets_lost}}}};
}

}  // namespace braid::transfer
