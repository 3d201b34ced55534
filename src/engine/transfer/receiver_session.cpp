#include "engine/transfer/receiver_session.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>
#include <system_error>

#include "core/chunk_plan.hpp"
#include "engine/files/held_verify.hpp"
#include "engine/files/piece_hasher.hpp"
#include "engine/files/resume_recorder.hpp"
#include "engine/files/transfer_key.hpp"
#include "engine/lanes/endpoint.hpp"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/lane_lookup.hpp"
#include "engine/transfer/udp_piece_assembly.hpp"
#include "engine/udp/udp_recv_lane.hpp"

namespace braid::transfer {

using Clock = std::chrono::steady_clock;

// How far UDP lanes' finished pieces may queue for the writer before the
// lanes stop counting new bytes as consumed (their senders' windows stop
// sliding: a disk slower than the network slows the senders down, and
// memory stays bounded by this plus each lane's window).
constexpr uint64_t kUdpWriteBacklog = 64ull << 20;
// How long an offer waits for the resume journal of its transfer while
// another session holds it (files::ResumeJournal::open) before it is refused
// as busy.
constexpr std::chrono::milliseconds kJournalLockWait{5000};

// Lanes whose lane_join is being checked at once (adopt_lane): above any
// sender's burst of lanes (its --max-lanes is at most 256, 16 by default).
constexpr size_t kMaxJoining = 256;

namespace {

// The ranges a journal claims, at most as many as one accept can list (the
// rest is sent again). None of them counts yet: each is read back from disk
// and hashed first (files::verify_held).
files::HeldRanges claimable(const files::HeldRanges& loaded) {
  files::HeldRanges out;
  for (const auto& r : loaded.records()) {
    if (out.size() >= wire::kMaxHeldRanges) break;
    out.add(r);
  }
  return out;
}

}  // namespace

// One accepted transfer.
struct ReceiverSession::Incoming {
  wire::Offer offer;
  std::unique_ptr<files::ReceiveTree> tree;
  // Resume: what an earlier run left (held ranges) and what this run adds,
  // kept true on disk. Null for an empty transfer or when resume is off.
  std::unique_ptr<files::ResumeRecorder> resume;
  std::mutex mu;
  std::map<uint32_t, files::PieceRecord> pieces;  // verified, by piece id
  std::map<uint32_t, uint64_t> lane_bytes;        // verified bytes per lane
  std::map<uint32_t, uint32_t> lane_pieces;
  bool failed = false;
  bool finished = false;
  Clock::time_point start = Clock::now();
  // Resume: what the journal claimed, read back from disk at the offer.
  uint64_t reverified_bytes = 0;  // matched their hash: held, not sent again
  uint64_t refetched_bytes = 0;   // claimed but not on disk as claimed: sent again
  double resume_check_seconds = 0;
};

struct ReceiverSession::Lane {
  uint32_t id = 0;
  std::unique_ptr<lanes::LaneLink> link;
  std::string local, remote;
  bool alive = true;
  bool joined = false;  // counted against the session's lane cap
  std::string close_reason;
  std::thread reader;
  // The piece this lane is receiving (pieces arrive whole, in order, per
  // lane). Its bytes gather in `piece_bytes` and reach the disk in one write
  // once the piece's hash checks out: nothing unverified is ever written.
  bool receiving = false;
  uint32_t transfer = 0, piece = 0;
  uint64_t piece_offset = 0, piece_length = 0, next = 0;
  bool write = true;  // false: another copy of this piece was verified already
  std::unique_ptr<files::PieceHasher> hasher;
  std::vector<uint8_t> piece_bytes;  // reused from piece to piece (≤ one chunk)
  Clock::time_point first_byte;
  std::shared_ptr<Incoming> t;
};

// A UDP lane (receiving end): its socket and I/O thread, and the pieces it
// is assembling (bytes from its I/O thread, headers from a TCP reader).
struct ReceiverSession::UdpLane {
  struct Piece {
    UdpPieceAssembly assembly;
    Clock::time_point first_byte;
    std::shared_ptr<Incoming> t;
  };
  uint32_t id = 0;
  std::unique_ptr<UdpEvents> events;
  std::unique_ptr<udp::UdpRecvLane> lane;
  std::string local;
  bool alive = true;         // under the session's mu_
  bool peer_closed = false;  // the sender announced the close: do not announce it back
  std::string close_reason;
  std::mutex mu;             // pieces, done
  std::map<uint64_t, Piece> pieces;  // by lane piece id: transfer << 32 | piece
  std::set<uint64_t> done;           // acked; late duplicates of these are dropped
  /// Bytes taken in while the writer was behind, not yet counted as
  /// consumed: the sender's window stops sliding until the writer catches up.
  std::atomic<uint64_t> held_credit{0};

  /// A piece of chunk `chunk` of transfer `t`, before anything is known of it.
  static Piece new_piece(const std::shared_ptr<Incoming>& t, uint64_t chunk);
};

class ReceiverSession::UdpEvents : public udp::UdpRecvEvents {
 public:
  UdpEvents(ReceiverSession& s, UdpLane& lane) : s_(s), lane_(lane) {}
  size_t on_data(uint64_t piece, uint64_t offset, std::span<const uint8_t> bytes) override {
    return s_.on_udp_data(lane_, piece, offset, bytes);
  }
  void on_closed(const std::string& reason) override { s_.on_udp_closed(lane_, reason); }

 private:
  ReceiverSession& s_;
  UdpLane& lane_;
};

ReceiverSession::ReceiverSession(const ReceiverConfig& cfg, EventLog& log, std::string peer,
                                 std::vector<uint8_t> peer_key, uint64_t session_id, const security::LaneSecret& secret)
    : cfg_(cfg),
      log_(log),
      peer_(std::move(peer)),
      peer_key_(std::move(peer_key)),
      session_id_(session_id),
      secret_(secret),
      udp_writer_(std::make_unique<SerialWorker>([this](uint64_t queued) {
        if (queued <= kUdpWriteBacklog) release_udp_credit();
      })) {}

ReceiverSession::~ReceiverSession() {
  // UDP lanes first: they post to the writer, whose jobs use the TCP lanes.
  // Taken out under mu_ (the writer's release_udp_credit reads them there),
  // ended outside it (their on_closed takes mu_).
  std::vector<std::unique_ptr<udp::UdpRecvLane>> ending;
  {
    std::lock_guard lock(mu_);
    for (auto& u : udp_lanes_) ending.push_back(std::move(u->lane));
  }
  ending.clear();
  for (auto& l : lanes_) l->link->shutdown();  // a reply the writer is blocked in fails now
  for (auto& l : lanes_)  // readers may still post a UDP piece whose header they read
    if (l->reader.joinable()) l->reader.join();
  udp_writer_.reset();
}

void ReceiverSession::note(const std::string& line) const {
  if (!cfg_.quiet) std::cerr << "braid: " << line << std::endl;
}

int ReceiverSession::outcome() const {
  std::lock_guard lock(mu_);
  return outcome_;
}

std::vector<TransferReport> ReceiverSession::reports() const {
  std::vector<std::shared_ptr<Incoming>> all;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, t] : transfers_) all.push_back(t);
  }
  // Each transfer's lock before the session's (the order handle_done takes
  // them in), so a transfer is either finished and reported, or not yet.
  std::vector<std::unique_lock<std::mutex>> held;
  for (const auto& t : all) held.emplace_back(t->mu);
  std::lock_guard lock(mu_);
  std::vector<TransferReport> out = reports_;
  for (const auto& t : all) {
    if (t->finished) continue;
    TransferReport rep;
    rep.role = "recv";
    rep.transfer_id = t->offer.transfer_id;
    rep.peer = peer_;
    rep.hash = wire::hash_algo_name(t->offer.hash);
    rep.chunk_size = t->offer.chunk_size;
    rep.bytes = t->tree->layout().total();
    for (const auto& e : t->offer.entries) rep.files += e.kind == wire::EntryKind::file;
    rep.resumed_bytes = t->resume ? t->resume->held_bytes() : 0;
    rep.held_bytes = t->resume ? t->resume->claimed_bytes() : 0;  // the journal's claim: what the next run resumes
    rep.reverified_bytes = t->reverified_bytes;
    rep.refetched_bytes = t->refetched_bytes;
    rep.resume_check_seconds = t->resume_check_seconds;
    rep.seconds = std::chrono::duration<double>(Clock::now() - t->start).count();
    rep.status = t->failed ? "failed" : interrupted_ ? "interrupted" : "incomplete";
    out.push_back(std::move(rep));
  }
  return out;
}

// ---- interruption ----------------------------------------------------------------

void ReceiverSession::interrupt(const std::string& reason) {
  if (interrupted_.exchange(true)) return;
  log_.write("interrupted", {{"reason", reason}});
  // The sender hears why before its lanes close, and says so.
  (void)reply(0, wire::ErrorMessage{0, reason});
  std::vector<Lane*> tcp;
  std::vector<udp::UdpRecvLane*> udp;
  {
    std::lock_guard lock(mu_);
    ending_ = true;  // run() ends: the unfinished transfers' journals are committed there
    for (auto& l : lanes_) {
      if (!l->alive) continue;
      l->alive = false;
      l->close_reason = reason;
      tcp.push_back(l.get());
    }
    for (auto& u : udp_lanes_) {
      if (!u->alive || !u->lane) continue;
      u->peer_closed = true;  // told already: the error above
      udp.push_back(u->lane.get());
    }
    cv_.notify_all();
  }
  for (Lane* l : tcp) {
    log_.write("lane_closed", {{"lane", l->id}, {"reason", reason}});
    l->link->shutdown();
  }
  for (auto* u : udp) u->close(reason);  // on_udp_closed records the reason
}

uint64_t ReceiverSession::rejected_frames() const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  for (const auto& l : lanes_) n += l->link->rejected_total();
  for (const auto& u : udp_lanes_)
    if (u->lane) n += u->lane->counters().rejected_total();
  return n;
}

bool ReceiverSession::start_lane(std::unique_ptr<lanes::LaneLink> link, bool needs_join) {
  auto lane = std::make_unique<Lane>();
  lane->id = link->id();
  lane->local = lanes::local_endpoint_of(link->fd()).str();
  lane->remote = lanes::peer_endpoint_of(link->fd()).str();
  lane->link = std::move(link);
  lane->joined = !needs_join;  // lane 0 came with the session
  Lane& l = *lane;
  std::lock_guard lock(mu_);
  lanes_.push_back(std::move(lane));
  try {
    l.reader = std::thread([this, &l, needs_join] {
      reader_loop(l, needs_join);
      // A closed lane stays listed until the session ends; its piece buffer
      // (up to a chunk, 64 MiB) goes now, or lanes opened and closed over and
      // over would add up.
      std::vector<uint8_t>().swap(l.piece_bytes);
    });
  } catch (const std::system_error& e) {
    // No thread to read it: the lane never was (its fd closes with the session).
    l.alive = false;
    l.close_reason = std::string("no thread for its reader: ") + e.what();
    l.link->shutdown();
    cv_.notify_all();
    log_.write("lane_refused", {{"lane", l.id}, {"remote", l.remote}, {"reason", l.close_reason}});
    return false;
  }
  return true;
}

bool ReceiverSession::adopt_lane(security::UniqueFd fd, uint32_t lane_id) {
  {
    std::lock_guard lock(mu_);
    if (ending_) return false;
    size_t joining = 0;
    for (const auto& l : lanes_) {
      if (l->id == lane_id) return false;  // a lane id joins once: a replayed join is refused
      joining += l->alive && !l->joined;
    }
    // Lanes whose join is not checked yet each hold a reader thread. The
    // Receiver hands over a lane only once its whole lane_join frame is
    // buffered, so each is checked within microseconds; the bound is loose
    // (a sender opening all its lanes at once is told the cap's reason on
    // each lane beyond it, which needs its join read first).
    if (joining >= std::max<size_t>(cfg_.max_lanes, kMaxJoining)) return false;
  }
  std::string error;
  auto link = lanes::LaneLink::create(std::move(fd), session_id_, lane_id, secret_, security::Role::server, error);
  if (!link) return false;
  return start_lane(std::move(link), true);
}

void ReceiverSession::run(std::unique_ptr<lanes::LaneLink> link, const std::vector<std::string>& advertised) {
  wire::Addresses addrs;
  addrs.endpoints = advertised;
  {
    std::lock_guard lock(mu_);
    advertised_ = advertised;
  }
  (void)link->send_message(addrs);
  log_.write("lane_open", {{"lane", 0}, {"local", lanes::local_endpoint_of(link->fd()).str()},
                           {"remote", lanes::peer_endpoint_of(link->fd()).str()}});
  start_lane(std::move(link), false);

  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] {
      if (!control_.empty() || ending_) return true;
      for (auto& l : lanes_)
        if (l->alive) return false;
      return true;
    });
    if (control_.empty()) break;  // ending, or every lane is gone
    Control c = std::move(control_.front());
    control_.pop_front();
    lock.unlock();
    switch (c.type) {
      case wire::FrameType::offer: handle_offer(c); break;
      case wire::FrameType::done: handle_done(c); break;
      case wire::FrameType::lane_closed: {
        wire::LaneClosed m;
        if (!wire::decode(c.payload, m)) break;
        Lane* other = nullptr;
        {
          std::lock_guard g(mu_);
          other = find_lane_by_id(lanes_, m.lane_id);
        }
        if (other) close_lane(*other, "closed by the sender: " + m.reason, false);
        UdpLane* u = nullptr;
        {
          std::lock_guard g(mu_);
          u = find_lane_by_id(udp_lanes_, m.lane_id);
          if (u && !u->lane) u = nullptr;
          if (u) u->peer_closed = true;
        }
        if (u) u->lane->close("closed by the sender: " + m.reason);  // on_udp_closed logs it
        break;
      }
      case wire::FrameType::bye: {
        std::lock_guard g(mu_);
        ending_ = true;
        break;
      }
      case wire::FrameType::error: {
        wire::ErrorMessage m;
        if (wire::decode(c.payload, m)) {
          log_.write("peer_error", {{"message", json_safe(m.message)}});
          note("the sender ended the session: " + json_safe(m.message));
        }
        std::lock_guard g(mu_);
        ending_ = true;
        break;
      }
      default:
        break;
    }
    lock.lock();
  }
  ending_ = true;
  // Transfers accepted but never finished leave their temporary files, and
  // the journal of what in them is verified, for a later resume.
  std::vector<std::shared_ptr<Incoming>> unfinished;
  for (auto& [id, t] : transfers_) {
    std::lock_guard g(t->mu);
    if (t->finished) continue;
    if (outcome_ == 0) outcome_ = kExitFailure;
    unfinished.push_back(t);
  }
  lock.unlock();
  for (auto& t : unfinished)
    if (t->resume) t->resume->stop();
  for (auto& l : lanes_) l->link->shutdown();
  for (auto& u : udp_lanes_)
    if (u->lane) u->lane->close("session ended");
  log_.write("status", {{"status", "session_closed"}, {"peer", peer_}});
}

// ---- lanes ---------------------------------------------------------------------

void ReceiverSession::close_lane(Lane& lane, const std::string& reason, bool announce) {
  bool session_ending;
  {
    std::lock_guard lock(mu_);
    if (!lane.alive) return;
    lane.alive = false;
    lane.close_reason = reason;
    session_ending = ending_;
    cv_.notify_all();
  }
  if (session_ending) {  // the end of a session closes every lane: not news
    lane.link->shutdown();
    return;
  }
  log_.write("lane_closed", {{"lane", lane.id}, {"reason", reason}});
  note("lane " + std::to_string(lane.id) + " (" + lane.remote + ") closed: " + reason);
  if (announce) {  // before the socket closes, so the reason tends to arrive first
    wire::LaneClosed m;
    m.lane_id = lane.id;
    m.reason = reason;
    (void)reply(UINT32_MAX, m);
  }
  lane.link->shutdown();
}

std::string ReceiverSession::lane_limit_locked() const {
  size_t open = 0;  // the lane asking is not counted yet: not joined, or not listed
  for (const auto& l : lanes_) open += l->alive && l->joined;
  for (const auto& u : udp_lanes_) open += u->alive;
  if (open < cfg_.max_lanes) return {};
  return "the receiver takes at most " + std::to_string(cfg_.max_lanes) + " lanes per session";
}

template <class M>
bool ReceiverSession::reply(uint32_t preferred_lane, const M& m) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    Lane* lane = nullptr;
    {
      std::lock_guard lock(mu_);
      for (auto& l : lanes_) {
        if (!l->alive) continue;
        if (!lane || l->id == preferred_lane) lane = l.get();
      }
    }
    if (!lane) return false;
    if (lane->link->send_message(m)) return true;
    close_lane(*lane, "write failed: " + lane->link->send_error(), false);
  }
  return false;
}

void ReceiverSession::reader_loop(Lane& lane, bool needs_join) {
  if (needs_join) {
    lanes::Incoming in = lane.link->read();
    wire::LaneJoin join;
    if (in.status != lanes::ReadStatus::frame || in.type != wire::FrameType::lane_join ||
        !wire::decode(in.payload, join) || join.lane_id != lane.id || join.version != wire::kProtocolVersion) {
      log_.write("lane_refused", {{"lane", lane.id}, {"remote", lane.remote},
                                  {"reason", in.reason.empty() ? "no valid lane_join" : in.reason}});
      std::lock_guard lock(mu_);
      lane.alive = false;
      lane.close_reason = "join refused";
      lane.link->shutdown();
      return;
    }
    std::string over;
    {
      std::lock_guard lock(mu_);
      over = lane_limit_locked();
      if (!over.empty()) {
        lane.alive = false;
        lane.close_reason = over;
      } else {
        lane.joined = true;
      }
    }
    if (!over.empty()) {  // told on the lane itself: the sender is waiting there for its welcome
      log_.write("lane_refused", {{"lane", lane.id}, {"remote", lane.remote}, {"reason", over}});
      (void)lane.link->send_message(wire::LaneClosed{lane.id, over});
      lane.link->shutdown();
      return;
    }
    wire::LaneWelcome w;
    w.lane_id = lane.id;
    if (!lane.link->send_message(w)) return close_lane(lane, "write failed", false);
    log_.write("lane_open", {{"lane", lane.id}, {"local", lane.local}, {"remote", lane.remote}});
  }
  // Piece bytes are decrypted straight into the lane's piece buffer where
  // they belong (after the frame's piece header), not copied there.
  lanes::Landing landing{wire::FrameType::piece_data, wire::PieceHeader::kSize, {}};
  for (;;) {
    landing.tail = piece_landing(lane);
    lanes::Incoming in = lane.link->read(&landing);
    if (in.status == lanes::ReadStatus::rejected) {
      log_.write("frame_rejected", {{"lane", lane.id}, {"reason", in.reason}});
      continue;
    }
    if (in.status != lanes::ReadStatus::frame) {
      close_lane(lane, in.reason, true);
      break;
    }
    if (in.type == wire::FrameType::piece_data) {
      handle_piece(lane, in);
      if (!lane.alive) break;
      continue;
    }
    if (in.type == wire::FrameType::piece_abort) {
      lane.receiving = false;
      continue;
    }
    if (in.type == wire::FrameType::lane_join) continue;
    // UDP lane set-up and piece headers are handled here, not queued behind
    // offers on the control thread: a piece's bytes may be waiting for them.
    if (in.type == wire::FrameType::udp_open) {
      handle_udp_open(lane, in.payload);
      continue;
    }
    if (in.type == wire::FrameType::udp_piece) {
      handle_udp_piece(in.payload);
      continue;
    }
    std::lock_guard lock(mu_);
    control_.push_back(Control{lane.id, in.type, std::vector<uint8_t>(in.payload.begin(), in.payload.end())});
    cv_.notify_all();
  }
  lane.t.reset();
}

std::span<uint8_t> ReceiverSession::piece_landing(Lane& lane) {
  // Where the next frame's bytes go if it continues this piece, or starts
  // the next one (at the buffer's start); handle_piece moves them otherwise.
  std::span<uint8_t> all(lane.piece_bytes);
  if (!lane.receiving) return all;
  const uint64_t at = lane.next - lane.piece_offset;
  return all.subspan(at, lane.piece_length - at);
}

void ReceiverSession::handle_piece(Lane& lane, const lanes::Incoming& in) {
  if (in.payload.size() < wire::PieceHeader::kSize) return close_lane(lane, "a malformed piece frame", true);
  std::span<const uint8_t> data = in.landed.empty() ? in.payload.subspan(wire::PieceHeader::kSize) : in.landed;
  wire::PieceHeader h;
  if (!wire::decode_piece_header(in.payload, data.size(), h)) return close_lane(lane, "a malformed piece frame", true);
  size_t n = data.size();
  std::vector<uint8_t> moved;  // the frame's bytes, if they sit in a piece buffer about to grow
  if (!lane.receiving || lane.transfer != h.transfer_id || lane.piece != h.piece) {
    lane.receiving = false;
    lane.t.reset();
    if (h.data_offset != h.piece_offset) return;  // the middle of a piece whose start we never saw
    std::shared_ptr<Incoming> t;
    {
      std::lock_guard lock(mu_);
      if (auto it = transfers_.find(h.transfer_id); it != transfers_.end()) t = it->second;
    }
    if (!t || t->finished || t->failed) return;  // not accepted, or over: drop the bytes
    if (h.piece_offset + h.piece_length > t->tree->layout().total())
      return close_lane(lane, "a piece beyond the end of the transfer", true);
    if (h.piece_length > t->offer.chunk_size) return close_lane(lane, "a piece larger than a chunk", true);
    if (lane.piece_bytes.size() < t->offer.chunk_size) {
      if (!in.landed.empty()) data = std::span<const uint8_t>(moved = std::vector<uint8_t>(data.begin(), data.end()));
      lane.piece_bytes.resize(t->offer.chunk_size);
    }
    if (!lane.hasher || lane.hasher->algo() != t->offer.hash)
      lane.hasher = std::make_unique<files::PieceHasher>(t->offer.hash);
    lane.hasher->reset();
    lane.receiving = true;
    lane.transfer = h.transfer_id;
    lane.piece = h.piece;
    lane.piece_offset = h.piece_offset;
    lane.piece_length = h.piece_length;
    lane.next = h.piece_offset;
    lane.first_byte = Clock::now();
    lane.t = std::move(t);
    // Another copy of this piece was verified already: its bytes are on disk
    // (and perhaps claimed in the resume journal); this one is only hashed and acked.
    {
      std::lock_guard g(lane.t->mu);
      lane.write = lane.t->pieces.count(h.piece) == 0;
    }
    if (lane.write && !may_write(*lane.t, h.piece_offset, h.piece_length)) {
      lane.receiving = false;
      return;
    }
  }
  if (h.data_offset != lane.next || h.piece_offset != lane.piece_offset || h.piece_length != lane.piece_length) {
    lane.receiving = false;  // out of sequence: this copy of the piece is lost; the scheduler resends
    return;
  }
  if (n > lane.piece_offset + lane.piece_length - lane.next) {
    lane.receiving = false;  // runs past the piece's end: drop this copy
    return;
  }
  lane.hasher->update(data);
  // Usually the bytes landed in place; a frame that starts another piece, or
  // came before the buffer existed, is moved to its place.
  if (uint8_t* at = lane.piece_bytes.data() + (lane.next - lane.piece_offset); at != data.data())
    std::memmove(at, data.data(), n);
  lane.next += n;
  if (!h.last()) return;
  lane.receiving = false;
  if (lane.next != lane.piece_offset + lane.piece_length) return;  // "last" before the end: this copy is lost
  Incoming& t = *lane.t;
  const wire::Digest got = lane.hasher->finish();
  if (got == h.hash && lane.write &&
      !write_verified(t, lane.piece_offset, std::span<const uint8_t>(lane.piece_bytes.data(), lane.piece_length))) {
    wire::Ack nack{h.transfer_id, h.piece, 0, wire::AckStatus::write_failed};
    (void)lane.link->send_message(nack);
    return;
  }
  const auto duration = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - lane.first_byte);
  wire::Ack ack{h.transfer_id, h.piece, static_cast<uint64_t>(duration.count()), wire::AckStatus::ok};
  if (!(got == h.hash)) {
    ack.status = wire::AckStatus::hash_mismatch;
    log_.write("piece_hash_mismatch", {{"lane", lane.id}, {"piece", h.piece}});
  } else {
    count_verified(t, lane.id, h.piece, files::PieceRecord{h.piece_offset, h.piece_length, got});
  }
  if (!lane.link->send_message(ack)) close_lane(lane, "write failed: " + lane.link->send_error(), true);
}

// Both lane kinds end a piece here: verified bytes to disk, then counted.
bool ReceiverSession::write_verified(Incoming& t, uint64_t offset, std::span<const uint8_t> bytes) {
  // BRAID_TEST_WRITE_DELAY_MS=N: every piece's write takes N ms longer — a
  // disk slower than the network, for the tests of the receiver's backpressure.
  static const long delay_ms = [] {
    const char* v = std::getenv("BRAID_TEST_WRITE_DELAY_MS");
    return v ? std::strtol(v, nullptr, 10) : 0L;
  }();
  if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  const int err = t.tree->write(offset, bytes);
  if (err == 0) return true;
  const bool full = err == ENOSPC || err == EDQUOT;
  fail_transfer(t, full ? wire::ResultStatus::no_space : wire::ResultStatus::write_failed,
                std::string(full ? "the target disk is full: " : "cannot write to the target: ") + std::strerror(err) +
                    " (the temporary files are kept for a later resume)");
  return false;
}

void ReceiverSession::count_verified(Incoming& t, uint32_t lane_id, uint32_t piece, const files::PieceRecord& record) {
  std::lock_guard lock(t.mu);
  if (!t.pieces.emplace(piece, record).second) return;  // another lane's copy was counted first
  t.lane_bytes[lane_id] += record.length;
  t.lane_pieces[lane_id] += 1;
  if (t.resume) t.resume->verified(record);
}

// ---- control -------------------------------------------------------------------

bool ReceiverSession::ask_user(const wire::Offer& offer) {
  if (cfg_.yes) return true;
  if (!::isatty(STDIN_FILENO)) return false;
  std::cerr << "braid: '" << peer_ << "' offers " << offer.entries.size() << " entries, " << offer.total_bytes()
            << " bytes:";
  size_t shown = 0;
  for (const auto& e : offer.entries) {
    if (e.path.find('/') != std::string::npos) continue;
    std::cerr << " " << security::printable_path(e.path);
    if (++shown == 5) break;
  }
  std::cerr << "\nbraid: accept? [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return !answer.empty() && (answer[0] == 'y' || answer[0] == 'Y');
}

void ReceiverSession::handle_offer(const Control& c) {
  wire::Offer offer;
  if (!wire::decode(c.payload, offer)) {
    wire::ErrorMessage e{0, "malformed offer"};
    (void)reply(c.lane_id, e);
    return;
  }
  auto refuse = [&](wire::RefuseReason reason, const std::string& message) {
    log_.write("offer_refused", {{"transfer", offer.transfer_id}, {"reason", wire::refuse_reason_name(reason)},
                                 {"message", json_safe(message)}});
    note("refused an offer from '" + peer_ + "': " + message);
    wire::Refuse r{offer.transfer_id, reason, message};
    (void)reply(c.lane_id, r);
    std::lock_guard lock(mu_);
    if (outcome_ == 0)
      outcome_ = reason == wire::RefuseReason::not_writable ? kExitNotWritable
                 : reason == wire::RefuseReason::no_space   ? kExitDiskFull
                                                            : kExitRefused;
  };
  {
    std::lock_guard lock(mu_);
    if (transfers_.count(offer.transfer_id)) {
      wire::Refuse r{offer.transfer_id, wire::RefuseReason::bad_offer, "transfer id already used in this session"};
      (void)reply(c.lane_id, r);
      return;
    }
  }
  // The chunk size bounds each piece's receive buffer (one per lane).
  if (offer.chunk_size < core::ChunkPlan::kMinChunk.count() || offer.chunk_size > core::ChunkPlan::kMaxChunk.count())
    return refuse(wire::RefuseReason::bad_offer,
                  "the offer's chunk size " + std::to_string(offer.chunk_size) + " is outside " +
                      std::to_string(core::ChunkPlan::kMinChunk.count()) + ".." +
                      std::to_string(core::ChunkPlan::kMaxChunk.count()) + " bytes");
  log_.write("offer", {{"transfer", offer.transfer_id}, {"entries", offer.entries.size()},
                       {"bytes", offer.total_bytes()}, {"peer", peer_}});
  if (!ask_user(offer))
    return refuse(wire::RefuseReason::declined,
                  cfg_.yes ? "declined" : "declined (the receiver has no terminal to ask and was not started with --yes)");
  // Resume: the journal of an earlier run of this very offer from this very
  // sender (the key says which), if there is one.
  const files::TransferKey key = files::transfer_key(offer, peer_key_);
  std::unique_ptr<files::ResumeJournal> journal;
  if (offer.total_bytes() > 0) {
    // A session of this transfer that is ending (its sender just died) lets go at its last commit: wait for it.
    auto opened = files::ResumeJournal::open(cfg_.root_fd,
                                             files::JournalParams{key, offer.hash, offer.chunk_size, offer.total_bytes()},
                                             kJournalLockWait, &interrupted_);
    if (auto* e = std::get_if<files::JournalError>(&opened)) {
      if (e->busy) return refuse(wire::RefuseReason::busy, e->message);
      log_.write("resume_off", {{"transfer", offer.transfer_id}, {"reason", json_safe(e->message)}});
    } else {
      journal = std::move(std::get<0>(opened));
    }
  }
  const files::HeldRanges loaded = journal ? journal->loaded() : files::HeldRanges();
  auto prepared = files::ReceiveTree::prepare(cfg_.root_fd, offer,
                                              files::PrepareOptions{key.tag(), !loaded.empty(), loaded.bytes(), cfg_.links});
  if (auto* err = std::get_if<files::PrepareError>(&prepared)) {
    if (journal && loaded.empty()) (void)journal->remove();  // nothing to resume: leave nothing behind
    return refuse(err->reason, err->message);
  }
  auto t = std::make_shared<Incoming>();
  t->offer = std::move(offer);
  t->tree = std::move(std::get<0>(prepared));
  const uint32_t id = t->offer.transfer_id;
  wire::Accept accept{id, {}};
  for (const auto& l : t->tree->skipped_links()) {
    log_.write("link_skipped", {{"transfer", id}, {"path", json_safe(l.path)}, {"target", json_safe(l.target)},
                                {"reason", l.reason}});
    note("not creating the link '" + security::printable_path(l.path) + "' -> '" +
         security::printable_path(l.target) + "': " + l.reason + " (--links " + files::link_policy_name(cfg_.links) +
         ")");
  }
  if (journal) {
    const files::HeldRanges claimed = claimable(loaded);
    if (!loaded.empty()) {
      // A temporary file another size than its file: cut, extended or gone
      // since the earlier run. Made the right size again; what of it still
      // matches is kept like the rest, after the read-back below.
      for (size_t i = 0; i < t->offer.entries.size(); ++i) {
        const auto& e = t->offer.entries[i];
        const int64_t found = t->tree->part_size_found(i);
        if (e.kind != wire::EntryKind::file || found == static_cast<int64_t>(e.size)) continue;
        log_.write("resume_part_resized", {{"transfer", id}, {"entry", i}, {"found", found}, {"size", e.size}});
        note("resume: '" + security::printable_path(t->tree->temp_path(i)) + "' " +
             (found < 0 ? "was missing" : "had " + std::to_string(found) + " bytes") + ", its file has " +
             std::to_string(e.size) + ": its held bytes are checked on disk, what differs is fetched again");
      }
    }
    // Nothing held counts before it is read back and matches its hash.
    files::HeldVerifyResult v = files::verify_held(*t->tree, claimed, t->offer.hash, {0, &interrupted_});
    if (v.cancelled) {
      // The journal is left as it was (its claims unchecked, not dropped): the next run checks them.
      wire::Refuse r{id, wire::RefuseReason::busy, "the receiver was interrupted"};
      (void)reply(c.lane_id, r);
      return;
    }
    files::HeldRanges held = std::move(v.verified);
    t->reverified_bytes = held.bytes();
    t->refetched_bytes = loaded.bytes() - held.bytes();
    t->resume_check_seconds = v.seconds;
    for (const auto& f : v.failed)
      log_.write("resume_mismatch", {{"transfer", id}, {"offset", f.offset}, {"length", f.length}});
    if (!v.failed.empty())
      note("resume: " + std::to_string(v.failed_bytes) + " bytes held from an earlier run (" +
           std::to_string(v.failed.size()) + " ranges) differ from what was verified then: fetched again");
    // The journal now says exactly what the accept says: nothing the sender
    // is not told about can stay claimed — a range that failed the read-back
    // loses its claim here, durably, before anything is written over it.
    if (const int err = journal->rewrite(held.records()); err != 0) {
      log_.write("resume_off", {{"transfer", id}, {"reason", std::string("cannot rewrite the resume journal: ") +
                                                               std::strerror(err)}});
      held = files::HeldRanges();
      (void)journal->remove();
    }
    for (const auto& r : held.records()) accept.held.push_back(wire::HeldRange{r.offset, r.length, r.hash});
    if (!loaded.empty())
      log_.write("resume", {{"transfer", id}, {"held_ranges", held.size()}, {"held_bytes", held.bytes()},
                            {"dropped_ranges", loaded.size() - held.size()},
                            {"journal_records_dropped", journal->dropped_records()},
                            {"reverified_bytes", t->reverified_bytes}, {"refetched_bytes", t->refetched_bytes},
                            {"mismatched_ranges", v.failed.size()}, {"check_seconds", v.seconds}});
    t->resume = std::make_unique<files::ResumeRecorder>(std::move(journal), *t->tree, std::move(held));
  }
  {
    std::lock_guard lock(mu_);
    transfers_[id] = t;
  }
  log_.write("status", {{"status", "receiving"}, {"transfer", id}});
  note("receiving " + std::to_string(t->offer.entries.size()) + " entries, " + std::to_string(t->offer.total_bytes()) +
       " bytes from '" + peer_ + "'" +
       (accept.held.empty() ? "" : ", " + std::to_string(t->resume->held_bytes()) + " of them here already (resume)"));
  (void)reply(c.lane_id, accept);
}

void ReceiverSession::fail_transfer(Incoming& t, wire::ResultStatus status, const std::string& message) {
  {
    std::lock_guard lock(t.mu);
    if (t.failed || t.finished) return;
    t.failed = true;
  }
  // What arrived verified stays claimed for the next run — unless the root
  // hash disagreed: then which piece is wrong is unknown, and nothing is kept.
  if (t.resume) {
    if (status == wire::ResultStatus::root_mismatch)
      t.resume->discard("the root hash did not match");
    else
      t.resume->stop();
  }
  log_.write("status", {{"status", "failed"}, {"transfer", t.offer.transfer_id}, {"message", message}});
  note("transfer " + std::to_string(t.offer.transfer_id) + " failed: " + message);
  {
    std::lock_guard lock(mu_);
    if (outcome_ == 0)
      outcome_ = status == wire::ResultStatus::no_space       ? kExitDiskFull
                 : status == wire::ResultStatus::write_failed ? kExitNotWritable
                                                              : kExitVerifyFailed;
  }
  wire::TransferResult r{t.offer.transfer_id, status, message};
  (void)reply(UINT32_MAX, r);
  drop_udp_pieces(t.offer.transfer_id);
}

bool ReceiverSession::may_write(Incoming& t, uint64_t offset, uint64_t length) {
  if (!t.resume || t.resume->before_write(offset, length)) return true;
  const std::string why = t.resume->error();
  fail_transfer(t, wire::ResultStatus::write_failed,
                "cannot write over a range kept from an earlier run: the resume journal cannot record it" +
                    (why.empty() ? std::string() : " (" + why + ")"));
  return false;
}

// Pieces a UDP lane was still gathering when its transfer ended (copies the
// sender cancelled, or raced on another lane) hold a chunk-sized buffer each.
void ReceiverSession::drop_udp_pieces(uint32_t transfer_id) {
  std::vector<UdpLane*> lanes;
  {
    std::lock_guard lock(mu_);
    for (const auto& u : udp_lanes_) lanes.push_back(u.get());
  }
  for (UdpLane* u : lanes) {
    std::lock_guard lock(u->mu);
    std::erase_if(u->pieces, [&](const auto& p) { return (p.first >> 32) == transfer_id; });
  }
}

void ReceiverSession::handle_done(const Control& c) {
  wire::Done done;
  if (!wire::decode(c.payload, done)) return;
  std::shared_ptr<Incoming> t;
  {
    std::lock_guard lock(mu_);
    if (auto it = transfers_.find(done.transfer_id); it != transfers_.end()) t = it->second;
  }
  if (!t) return;
  // UDP lanes' last pieces may still be on their way to the disk: the
  // transport acked them on arrival, before they were verified and written.
  udp_writer_->drain();
  std::vector<files::PieceRecord> records;
  {
    std::lock_guard lock(t->mu);
    if (t->failed) return;
    for (const auto& [id, r] : t->pieces) records.push_back(r);
  }
  // The ranges resumed from an earlier run belong in the root hash too: it
  // proves the whole file set, resumed or sent.
  const uint64_t resumed = t->resume ? t->resume->held_bytes() : 0;
  if (t->resume)
    for (const auto& r : t->resume->held()) records.push_back(r);
  const uint64_t total = t->tree->layout().total();
  if (!files::pieces_tile(records, total))
    return fail_transfer(*t, wire::ResultStatus::incomplete, "the verified pieces do not cover every byte of the transfer");
  if (!(files::root_hash(t->offer.hash, records) == done.root))
    return fail_transfer(*t, wire::ResultStatus::root_mismatch, "the root hash does not match");
  int err = 0;
  // A last commit first: should putting the files in place fail, the next
  // run resumes everything that arrived.
  if (t->resume) t->resume->halt();
  const std::string failure = t->tree->finalize(err);
  if (!failure.empty()) {
    const bool full = err == ENOSPC || err == EDQUOT;
    return fail_transfer(*t, full ? wire::ResultStatus::no_space : wire::ResultStatus::write_failed, failure);
  }
  if (t->resume) t->resume->complete();  // every file is in place: nothing left to resume
  const double seconds = std::chrono::duration<double>(Clock::now() - t->start).count();
  TransferReport rep;
  rep.role = "recv";
  rep.transfer_id = done.transfer_id;
  rep.peer = peer_;
  rep.hash = wire::hash_algo_name(t->offer.hash);
  rep.chunk_size = t->offer.chunk_size;
  rep.bytes = total;
  rep.seconds = seconds;
  rep.resumed_bytes = resumed;
  rep.reverified_bytes = t->reverified_bytes;
  rep.refetched_bytes = t->refetched_bytes;
  rep.resume_check_seconds = t->resume_check_seconds;
  rep.held_bytes = total;
  for (const auto& l : t->tree->skipped_links()) rep.skipped.push_back(SkippedEntry{l.path, l.reason, l.target});
  rep.rate_bytes_per_sec = seconds > 0 ? static_cast<double>(total - resumed) / seconds : 0;  // what crossed the network
  rep.verified = true;
  rep.status = "verified";
  rep.root_hash = done.root.hex();
  for (const auto& e : t->offer.entries) rep.files += e.kind == wire::EntryKind::file;
  {
    std::lock_guard lock(t->mu);
    t->finished = true;
    std::lock_guard g(mu_);
    for (const auto& u : udp_lanes_) {
      LaneReport lr;
      lr.lane_id = u->id;
      lr.kind = "udp";
      lr.name = "lane" + std::to_string(u->id) + " udp";
      lr.local = u->local;
      lr.bytes = t->lane_bytes[u->id];
      lr.chunks = t->lane_pieces[u->id];
      lr.share = total > resumed ? static_cast<double>(lr.bytes) / static_cast<double>(total - resumed) : 0;
      if (u->lane) {
        const auto c = u->lane->counters();
        lr.wire_bytes = c.data_bytes_received;
        lr.rejected_frames = c.rejected_total();
      }
      lr.open_at_end = u->alive;
      lr.close_reason = u->close_reason;
      rep.lanes.push_back(lr);
    }
    for (const auto& l : lanes_) {
      LaneReport lr;
      lr.lane_id = l->id;
      lr.name = "lane" + std::to_string(l->id);
      lr.local = l->local;
      lr.remote = l->remote;
      lr.bytes = t->lane_bytes[l->id];
      lr.chunks = t->lane_pieces[l->id];
      lr.share = total > resumed ? static_cast<double>(lr.bytes) / static_cast<double>(total - resumed) : 0;
      lr.wire_bytes = l->link->bytes_received();
      lr.rejected_frames = l->link->rejected_total();
      lr.open_at_end = l->alive;
      lr.close_reason = l->close_reason;
      rep.lanes.push_back(lr);
    }
    reports_.push_back(rep);
  }
  drop_udp_pieces(done.transfer_id);
  log_.write("status", {{"status", "verified"}, {"transfer", done.transfer_id}, {"bytes", total},
                        {"resumed_bytes", resumed}, {"seconds", seconds}});
  note("transfer " + std::to_string(done.transfer_id) + ": " + std::to_string(rep.files) + " files, " +
       std::to_string(total) + " bytes from '" + peer_ + "' arrived and verified" +
       (resumed ? " (" + std::to_string(resumed) + " bytes resumed from an earlier run)" : ""));
  wire::TransferResult r{done.transfer_id, wire::ResultStatus::verified, "verified"};
  (void)reply(c.lane_id, r);
}

// ---- UDP lanes -------------------------------------------------------------------
//
// udp_open (over a TCP lane) → the lane joins the receiver's shared UDP port
// on the address the sender named (one we advertised) and the TCP
// listener's port number (udp_recv_port.hpp; a free port of its own if that
// one is taken), answered with udp_ready. The lane listens to the first
// source whose datagram authenticates with the lane's keys. Each piece's
// bytes are gathered in memory
// (UdpPieceAssembly), verified against the header's hash, then written with
// one pwrite. The sender's scheduler learns from the lane's transport acks;
// only a piece that fails its hash is reported (lane_ack over a TCP lane).

void ReceiverSession::handle_udp_open(Lane& via, std::span<const uint8_t> payload) {
  wire::UdpOpen m;
  if (!wire::decode(payload, m)) return;
  auto refuse = [&](const std::string& why) {
    log_.write("lane_refused", {{"lane", m.lane_id}, {"kind", "udp"}, {"reason", why}});
    (void)via.link->send_message(wire::UdpReady{m.lane_id, "", why});
  };
  auto where = lanes::parse_numeric_endpoint(m.address, 0);
  if (!where || where->is_wildcard()) return refuse("not an address: " + m.address);
  UdpLane* u = nullptr;
  std::string refusal;  // decided under mu_, sent after it: a TCP send may block
  {
    std::lock_guard lock(mu_);
    // Only an address we offered (or lane 0 reached): the sender cannot make us bind elsewhere.
    bool ours = where->same_host(lanes::local_endpoint_of(via.link->fd()));
    for (const auto& a : advertised_)
      if (auto e = lanes::parse_numeric_endpoint(a, 0); e && e->same_host(*where)) ours = true;
    if (ending_) {
      refusal = "the session is ending";
    } else if (find_lane_by_id(lanes_, m.lane_id) || find_lane_by_id(udp_lanes_, m.lane_id)) {
      refusal = "lane id in use";
    } else if (!ours) {
      refusal = "not an address of this receiver: " + where->host();
    } else {
      refusal = lane_limit_locked();
    }
    if (refusal.empty()) {
      auto lane = std::make_unique<UdpLane>();
      lane->id = m.lane_id;
      lane->events = std::make_unique<UdpEvents>(*this, *lane);
      u = lane.get();
      udp_lanes_.push_back(std::move(lane));
    }
  }
  if (!refusal.empty()) return refuse(refusal);
  udp::UdpLaneConfig cfg;
  cfg.lane_id = m.lane_id;
  cfg.session_id = session_id_;
  cfg.lane_secret = secret_;
  cfg.role = security::Role::server;
  cfg.packet_size = udp::kMaxPacketSize;  // receives what the sender chose
  std::string error;
  std::unique_ptr<udp::UdpRecvLane> lane;
  if (cfg_.udp_ports) {
    // The port number the sender reached us on for TCP (the one its address
    // names, if we listen there; else lane `via`'s), shared with every UDP
    // lane on that address: one port, TCP and UDP, is all a firewall must let in.
    uint16_t port = lanes::local_endpoint_of(via.link->fd()).port();
    for (uint16_t p : cfg_.listen_ports)
      if (p == where->port()) port = p;
    where->set_port(port);
    const udp::SocketAddress local = *udp::SocketAddress::parse(where->str());
    if (auto shared = cfg_.udp_ports->get(local, error)) {
      lane = udp::UdpRecvLane::start_on(std::move(shared), cfg, *u->events, error);
    } else {
      log_.write("udp_port_fallback", {{"lane", m.lane_id}, {"local", local.str()}, {"reason", error}});
      note("UDP port " + local.str() + " unavailable (" + error + "): lane " + std::to_string(m.lane_id) +
           " takes a free port");
    }
  }
  if (!lane) {
    where->set_port(0);
    cfg.local = *udp::SocketAddress::parse(where->str());
    lane = udp::UdpRecvLane::start(cfg, *u->events, error);
  }
  if (!lane) {
    {
      std::lock_guard lock(mu_);
      u->alive = false;
      u->close_reason = error;
    }
    return refuse(error);
  }
  u->local = lane->local_address().str();
  {
    std::lock_guard lock(mu_);
    u->lane = std::move(lane);
  }
  log_.write("lane_open", {{"lane", m.lane_id}, {"kind", "udp"}, {"local", u->local}});
  if (!via.link->send_message(wire::UdpReady{m.lane_id, u->local, ""}))
    close_lane(via, "write failed: " + via.link->send_error(), true);
}

void ReceiverSession::handle_udp_piece(std::span<const uint8_t> payload) {
  wire::UdpPiece m;
  if (!wire::decode(payload, m)) return;
  UdpLane* u = nullptr;
  std::shared_ptr<Incoming> t;
  {
    std::lock_guard lock(mu_);
    u = find_lane_by_id(udp_lanes_, m.lane_id);
    if (auto it = transfers_.find(m.transfer_id); it != transfers_.end()) t = it->second;
  }
  if (!u || !t || m.hash.size == 0) return;
  if (m.piece_offset + m.piece_length > t->tree->layout().total()) return;
  {
    std::lock_guard lock(t->mu);
    if (t->pieces.count(m.piece)) return;  // verified already (a header sent again)
  }
  const uint64_t key = (static_cast<uint64_t>(m.transfer_id) << 32) | m.piece;
  bool complete = false;
  {
    std::lock_guard lock(u->mu);
    u->done.erase(key);  // sent again: a new copy is coming
    auto it = u->pieces.find(key);
    if (it == u->pieces.end()) it = u->pieces.emplace(key, UdpLane::new_piece(t, m.chunk)).first;
    it->second.assembly.set_header(m.piece_offset, m.piece_length, m.hash);
    complete = it->second.assembly.complete();
  }
  if (complete) finish_udp_piece(*u, key);
}

size_t ReceiverSession::on_udp_data(UdpLane& u, uint64_t piece, uint64_t offset, std::span<const uint8_t> bytes) {
  std::shared_ptr<Incoming> t;
  {
    std::lock_guard lock(mu_);
    if (auto it = transfers_.find(static_cast<uint32_t>(piece >> 32)); it != transfers_.end()) t = it->second;
  }
  if (!t) return bytes.size();  // not accepted (or a stray range): dropped, consumed
  {
    std::lock_guard lock(t->mu);
    if (t->finished || t->failed) return bytes.size();
  }
  const uint64_t total = t->tree->layout().total();
  if (offset >= total || bytes.size() > total - offset) return bytes.size();
  bool complete = false;
  {
    std::lock_guard lock(u.mu);
    if (u.done.count(piece)) return bytes.size();  // a late duplicate of an acked piece
    auto it = u.pieces.find(piece);
    if (it == u.pieces.end()) it = u.pieces.emplace(piece, UdpLane::new_piece(t, offset / t->offer.chunk_size)).first;
    it->second.assembly.add(offset, bytes);
    complete = it->second.assembly.complete();
  }
  if (complete) finish_udp_piece(u, piece);
  if (udp_writer_->queued_bytes() <= kUdpWriteBacklog) return bytes.size();
  // The writer is behind: hold the credit. Checked again after holding, so
  // a writer that caught up in between cannot leave it held with nothing
  // left to release it.
  u.held_credit.fetch_add(bytes.size());
  if (udp_writer_->queued_bytes() > kUdpWriteBacklog) return 0;
  return static_cast<size_t>(u.held_credit.exchange(0));  // may include bytes held before: all consumed now
}

void ReceiverSession::release_udp_credit() {
  std::lock_guard lock(mu_);
  for (auto& u : udp_lanes_)
    if (u->lane)
      if (const uint64_t held = u->held_credit.exchange(0); held > 0) u->lane->consume(static_cast<size_t>(held));
}

void ReceiverSession::finish_udp_piece(UdpLane& u, uint64_t key) {
  std::shared_ptr<UdpLane::Piece> p;
  {
    std::lock_guard lock(u.mu);
    auto it = u.pieces.find(key);
    if (it == u.pieces.end() || !it->second.assembly.complete()) return;
    p = std::make_shared<UdpLane::Piece>(std::move(it->second));
    u.pieces.erase(it);
    u.done.insert(key);
  }
  const auto duration = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - p->first_byte);
  const uint64_t bytes = p->assembly.length();
  // Verify, write and count on the writer: pwrite, the resume journal and a
  // reply over a TCP lane may block, and the port's thread serves every
  // session's lanes on its address.
  udp_writer_->post(
      [this, &u, key, p, duration] {
        Incoming& t = *p->t;
        wire::LaneAck la{u.id, wire::Ack{static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key & 0xffffffffu),
                                         static_cast<uint64_t>(duration.count()), wire::AckStatus::ok}};
        if (!p->assembly.hash_ok()) {
          la.ack.status = wire::AckStatus::hash_mismatch;
          log_.write("piece_hash_mismatch", {{"lane", u.id}, {"piece", la.ack.piece}});
          (void)reply(0, la);
          return;
        }
        {
          std::lock_guard lock(t.mu);
          if (t.finished || t.failed || t.pieces.count(la.ack.piece)) return;  // another lane brought it first
        }
        if (!may_write(t, p->assembly.offset(), p->assembly.length())) return;
        if (!write_verified(t, p->assembly.offset(), p->assembly.bytes())) return;
        count_verified(t, u.id, la.ack.piece,
                       files::PieceRecord{p->assembly.offset(), p->assembly.length(), p->assembly.digest()});
        // No ack for a good piece: the lane's own transport ack already told
        // the sender's scheduler (so a lossy TCP control lane never holds a
        // UDP lane back), and the root hash at the end confirms every piece.
      },
      bytes);
}

ReceiverSession::UdpLane::Piece ReceiverSession::UdpLane::new_piece(const std::shared_ptr<Incoming>& t, uint64_t chunk) {
  const uint64_t size = t->offer.chunk_size, total = t->tree->layout().total();
  const uint64_t at = std::min(chunk * size, total);
  return UdpLane::Piece{UdpPieceAssembly(t->offer.hash, at, std::min(size, total - at)), Clock::now(), t};
}

void ReceiverSession::on_udp_closed(UdpLane& u, const std::string& reason) {
  bool announce;
  {
    std::lock_guard lock(mu_);
    if (!u.alive) return;
    u.alive = false;
    u.close_reason = reason;
    if (ending_) return;  // the end of a session closes every lane: not news
    announce = !u.peer_closed;
  }
  log_.write("lane_closed", {{"lane", u.id}, {"kind", "udp"}, {"reason", reason}});
  note("lane " + std::to_string(u.id) + " (udp " + u.local + ") closed: " + reason);
  // Over a TCP lane, which can block: not on the port's thread.
  if (announce) udp_writer_->post([this, id = u.id, reason] { (void)reply(0, wire::LaneClosed{id, reason}); });
}

}  // namespace braid::transfer
