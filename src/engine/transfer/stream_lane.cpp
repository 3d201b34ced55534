#include "engine/transfer/stream_lane.hpp"

#include <sys/socket.h>

#include <chrono>
#include <cstring>

#include "engine/files/piece_hasher.hpp"
#include "engine/lanes/tcp.hpp"
#include "engine/security/frame_format.h"
#include "engine/transfer/thread_name.hpp"

namespace braid::transfer {

using security::kFrameHeaderSize;
using security::kFrameTagSize;

namespace {
/// How long a closing lane may take to flush its last messages (a bye)
/// before its socket is shut under it: a dead path must not hold the exit.
constexpr auto kFlushLimit = std::chrono::milliseconds(500);
/// How long a lane whose send failed waits for its reader to deliver what
/// the peer sent before its end: a receiver that was interrupted says so and
/// then resets the connection, and its reason is in the socket behind us.
constexpr auto kDrainLimit = std::chrono::milliseconds(300);
}  // namespace

StreamLane::StreamLane(std::unique_ptr<lanes::LaneLink> link, Options opts, DataLaneEvents& events)
    : link_(std::move(link)),
      opts_(std::move(opts)),
      events_(events),
      frame_(kFrameHeaderSize + wire::PieceHeader::kSize + kFrameData + kFrameTagSize) {
  writer_ = std::thread([this] {
    name_this_thread("lane " + std::to_string(id()) + " send");
    writer_loop();
  });
  reader_ = std::thread([this] {
    name_this_thread("lane " + std::to_string(id()) + " acks");
    reader_loop();
  });
}

StreamLane::~StreamLane() {
  {
    std::unique_lock lock(mu_);
    closing_ = true;
    cancel_current_ = true;
    cv_.notify_all();
    // Only queued messages (a bye) are worth waiting for, and not long.
    cv_.wait_for(lock, kFlushLimit, [&] { return writer_done_ || (messages_.empty() && !sending_message_); });
  }
  link_->shutdown();  // wakes a writer blocked on a dead path and the reader
  // A pty or pipe has no shutdown(): ending the child ends the stream.
  opts_.owner.reset();
  if (writer_.joinable()) writer_.join();
  if (reader_.joinable()) reader_.join();
}

void StreamLane::send_message(const session::ToReceiver& msg) {
  std::lock_guard lock(mu_);
  if (closing_) return;
  messages_.push_back(session::encode(msg));
  cv_.notify_all();
}

void StreamLane::send_piece(std::shared_ptr<PieceSource> source, const core::Assign& a) {
  std::lock_guard lock(mu_);
  if (closing_) return;
  pieces_.push_back(Work{std::move(source), a});
  cv_.notify_all();
}

void StreamLane::cancel_piece(uint32_t transfer, core::PieceId piece) {
  std::lock_guard lock(mu_);
  if (current_ && current_->first == transfer && current_->second == piece) cancel_current_ = true;
  std::erase_if(pieces_, [&](const Work& w) { return w.source->transfer_id() == transfer && w.a.piece == piece; });
}

void StreamLane::drop_transfer(uint32_t transfer) {
  std::lock_guard lock(mu_);
  if (current_ && current_->first == transfer) cancel_current_ = true;
  std::erase_if(pieces_, [&](const Work& w) { return w.source->transfer_id() == transfer; });
}

void StreamLane::close(const std::string&) {
  std::lock_guard lock(mu_);
  closing_ = true;
  cancel_current_ = true;
  pieces_.clear();
  cv_.notify_all();
}

void StreamLane::failed(const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    cv_.notify_all();
  }
  link_->shutdown();
  if (!closed_reported_.exchange(true)) events_.on_closed(id(), reason, heard_.load());
}

void StreamLane::write_failed() {
  const std::string reason = "write failed: " + link_->send_error();
  {
    std::unique_lock lock(mu_);
    closing_ = true;
    cv_.notify_all();
    link_->shutdown_write();
    cv_.wait_for(lock, kDrainLimit, [&] { return reader_done_; });
  }
  failed(reason);
}

bool StreamLane::flush_messages(std::unique_lock<std::mutex>& lock) {
  while (!messages_.empty()) {
    session::Encoded m = std::move(messages_.front());
    messages_.pop_front();
    sending_message_ = true;
    lock.unlock();
    const bool ok = link_->send(m.type, m.payload);
    lock.lock();
    sending_message_ = false;
    cv_.notify_all();
    if (!ok) return false;
  }
  return true;
}

void StreamLane::writer_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return closing_ || !messages_.empty() || !pieces_.empty(); });
    if (!flush_messages(lock)) {
      lock.unlock();
      write_failed();
      lock.lock();
      break;
    }
    if (closing_) break;
    if (pieces_.empty()) continue;
    Work w = std::move(pieces_.front());
    pieces_.pop_front();
    current_ = {w.source->transfer_id(), w.a.piece};
    cancel_current_ = false;
    lock.unlock();
    std::string error;
    const PieceEnd end = send_one(w, error);
    lock.lock();
    current_.reset();
    if (end == PieceEnd::lane_failed) {
      lock.unlock();
      write_failed();
      lock.lock();
      break;
    }
    if (end == PieceEnd::read_failed) {
      lock.unlock();
      events_.on_read_failed(id(), w.source->transfer_id(), error);
      lock.lock();
    }
  }
  writer_done_ = true;
  cv_.notify_all();
  lock.unlock();
  link_->shutdown();
}

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

StreamLane::PieceEnd StreamLane::send_one(const Work& w, std::string& error) {
  PieceSource& src = *w.source;
  const core::Assign& a = w.a;
  events_.on_piece_started(id(), src.transfer_id(), a.piece);
  files::PieceHasher hasher(src.hash());
  const uint64_t end = a.offset.count() + a.length.count();
  for (uint64_t off = a.offset.count(); off < end;) {
    {
      // Messages (acks' answers, lane_closed, a join) pass between frames.
      std::unique_lock lock(mu_);
      if (!messages_.empty() && !flush_messages(lock)) return PieceEnd::lane_failed;
    }
    if (cancel_current_) {
      wire::PieceAbort abort{src.transfer_id(), a.piece};
      return link_->send_message(abort) ? PieceEnd::cancelled : PieceEnd::lane_failed;
    }
    const uint64_t n = std::min<uint64_t>(kFrameData, end - off);
    const std::optional<size_t> payload = load_frame(src, a, off, n, hasher, error);
    if (!payload && src.released(off)) {
      // A stale copy: the piece was acked on another lane and its files let go.
      wire::PieceAbort abort{src.transfer_id(), a.piece};
      return link_->send_message(abort) ? PieceEnd::cancelled : PieceEnd::lane_failed;
    }
    if (!payload) return PieceEnd::read_failed;
    const auto sending = std::chrono::steady_clock::now();
    if (!link_->send_in_place(wire::FrameType::piece_data, frame_, *payload)) return PieceEnd::lane_failed;
    // What sealing and the socket took per wire byte: the governor's other side.
    if (src.compress() == compress::Mode::automatic) governor_.sent(*payload, seconds_since(sending));
    off += n;
  }
  events_.on_piece_written(id(), src.transfer_id(), a.piece);
  return PieceEnd::sent;
}

std::optional<size_t> StreamLane::load_frame(PieceSource& src, const core::Assign& a, uint64_t off, uint64_t n,
                                             files::PieceHasher& hasher, std::string& error) {
  uint8_t* data = frame_.data() + kFrameHeaderSize + wire::PieceHeader::kSize;
  // Read the bytes once, straight into the frame buffer, and hash them
  // while they are hot in the cache; the link then seals them in place.
  if (!src.read(off, n, data, error)) return std::nullopt;
  hasher.update(std::span<const uint8_t>(data, n));
  // The one point where a frame may shrink: after the hash (which stays
  // over the file's bytes), before the seal.
  size_t wire_n = n;
  bool packed = false;
  const compress::Mode mode = src.compress();
  if (mode == compress::Mode::always || (mode == compress::Mode::automatic && governor_.try_next())) {
    packed_.resize(kFrameData);
    const auto began = std::chrono::steady_clock::now();
    const auto c = compressor_.compress(std::span<const uint8_t>(data, n), packed_);
    if (compressor_.ran_zstd()) governor_.compressed(n, c.value_or(n), seconds_since(began));
    if (c) {
      std::memcpy(data, packed_.data(), *c);
      wire_n = *c;
      packed = true;
      packed_file_bytes_ += n;
      packed_wire_bytes_ += *c;
    }
  }
  const uint64_t begin = a.offset.count();
  wire::PieceHeader h;
  h.transfer_id = src.transfer_id();
  h.piece = a.piece;
  h.chunk = a.chunk;
  h.piece_offset = begin;
  h.piece_length = a.length.count();
  h.data_offset = off;
  if (packed) h.flags |= wire::PieceHeader::kCompressed;
  if (off + n == begin + a.length.count()) {
    h.flags |= wire::PieceHeader::kLast;
    h.hash = hasher.finish();
    events_.on_piece_hashed(id(), src.transfer_id(), a.piece, h.hash);
  }
  wire::encode_piece_header(h, std::span<uint8_t, wire::PieceHeader::kSize>(frame_.data() + kFrameHeaderSize,
                                                                             wire::PieceHeader::kSize));
  return wire::PieceHeader::kSize + wire_n;
}

void StreamLane::reader_loop() {
  for (;;) {
    lanes::Incoming in = link_->read();
    if (in.status == lanes::ReadStatus::rejected) continue;  // counted by the link
    if (in.status != lanes::ReadStatus::frame) {
      {
        std::lock_guard lock(mu_);
        reader_done_ = true;
        cv_.notify_all();
      }
      failed(in.reason);
      return;
    }
    heard_ = true;
    if (auto m = session::decode_to_sender(in.type, in.payload)) events_.on_message(id(), *m);
  }
}

DataLaneCounters StreamLane::counters() const {
  return {link_->bytes_sent(), link_->rejected_total(), packed_file_bytes_.load(), packed_wire_bytes_.load()};
}

// ---- rate caps and --background ---------------------------------------------------
//
// The kernel runs TCP's congestion control; braid can only cap the socket's
// pacing rate (SO_MAX_PACING_RATE). The cap is the lower of the lane's
// --rate-limit share and the coupled cap its bottleneck group gets
// (TcpGroupCap, decided by the session over the group's lanes every few ms
// from TCP_INFO; a scavenger's under --background).

namespace {
std::optional<Rate> lower(std::optional<Rate> a, std::optional<Rate> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}
}  // namespace

void StreamLane::apply_cap_locked(std::optional<Rate> want) {
  if (on_socket_set_ && want == on_socket_) return;
  const bool ok = want ? lanes::set_max_pacing_rate(link_->fd(), *want) : lanes::clear_max_pacing_rate(link_->fd());
  if (ok) {
    const int lowat = lanes::notsent_lowat_for(want);
    if (lowat != lowat_on_socket_ && lanes::set_notsent_lowat(link_->fd(), lowat)) lowat_on_socket_ = lowat;
    on_socket_ = want;
    on_socket_set_ = true;
  }
}

void StreamLane::set_rate(std::optional<Rate> rate) {
  if (!opts_.tcp) return;
  // The cap counts what the network carries (IP and TCP headers in: a
  // metered plan bills them); the kernel paces segments' payload.
  lanes::TcpKernelInfo k;
  if (rate && lanes::tcp_kernel_info(link_->fd(), k) && k.snd_mss > 0 && k.pmtu > k.snd_mss)
    rate = *rate * (static_cast<double>(k.snd_mss) / k.pmtu);
  std::lock_guard lock(pace_mu_);
  rate_cap_ = rate;
  // At once: unpaced, a loopback lane moves megabytes before the next look.
  apply_cap_locked(lower(rate, delay_cap_));
}

void StreamLane::set_delay_cap(std::optional<Rate> cap, Duration queue, bool restart) {
  if (!opts_.tcp) return;
  if (restart) lanes::restart_congestion_control(link_->fd());
  lanes::TcpKernelInfo k;
  const bool have = lanes::tcp_kernel_info(link_->fd(), k);
  std::lock_guard lock(pace_mu_);
  delay_cap_ = cap;
  apply_cap_locked(lower(cap, rate_cap_));
  record_pacing_locked(queue, have ? &k : nullptr, restart);
}

void StreamLane::record_pacing_locked(Duration queue, const lanes::TcpKernelInfo* k, bool restarted) {
  auto& p = pacing_state_;
  p.active = true;
  p.cap = on_socket_ ? on_socket_->bytes_per_second() : -1.0;
  p.queue_ms = queue.to_millis();
  p.restarts += restarted;
  if (!k) return;
  p.srtt_ms = k->rtt_us / 1000.0;
  p.min_rtt_ms = k->min_rtt_us / 1000.0;
  p.acked = k->bytes_acked;
  p.kernel_pacing = k->pacing_rate;
  p.delivery_rate = k->delivery_rate;
  p.retrans = k->total_retrans;
  p.cwnd = k->snd_cwnd;
}

void StreamLane::add_to_report(LaneReport& r) const {
  r.kind = opts_.tcp ? "tcp" : lane_kind_name(opts_.traits.kind);
  std::lock_guard lock(pace_mu_);
  if (!pacing_state_.active) return;
  const auto& p = pacing_state_;
  TcpPacingReport tp;
  if (p.cap >= 0) tp.cap_bytes_per_sec = p.cap;
  tp.queuing_delay_ms = p.queue_ms;
  tp.srtt_ms = p.srtt_ms;
  tp.min_rtt_ms = p.min_rtt_ms;
  tp.kernel_pacing_bytes_per_sec = p.kernel_pacing;
  tp.segments_retransmitted = p.retrans;
  tp.restarts = p.restarts;
  r.tcp_pacing = tp;
}

bool StreamLane::tcp_info(lanes::TcpKernelInfo& out) const { return opts_.tcp && lanes::tcp_kernel_info(link_->fd(), out); }

nlohmann::json StreamLane::sample() const {
  nlohmann::json j = nlohmann::json::object();
  if (!opts_.tcp) return j;
  // What the kernel's TCP holds for this lane: whether braid gives it enough to send.
  if (lanes::TcpKernelInfo k; lanes::tcp_kernel_info(link_->fd(), k))
    j["kernel"] = {{"cwnd", uint64_t{k.snd_cwnd} * k.snd_mss}, {"in_flight", uint64_t{k.unacked} * k.snd_mss},
                   {"notsent", k.notsent_bytes},           {"delivery_rate", k.delivery_rate},
                   {"app_limited", k.delivery_rate_app_limited}, {"srtt_ms", k.rtt_us / 1000.0}};
  std::lock_guard lock(pace_mu_);
  if (pacing_state_.active) {
    const auto& p = pacing_state_;
    j["tcp"] = {{"cap", p.cap >= 0 ? nlohmann::json(p.cap) : nlohmann::json(nullptr)},
                {"queue_ms", p.queue_ms},
                {"srtt_ms", p.srtt_ms},
                {"min_rtt_ms", p.min_rtt_ms},
                {"kernel_pacing", p.kernel_pacing},
                {"delivery_rate", p.delivery_rate},
                {"cwnd", p.cwnd},
                {"acked", p.acked},
                {"retrans", p.retrans},
                {"restarts", p.restarts}};
  }
  return j;
}

}  // namespace braid::transfer
