// The receiver session's UDP lanes.
//
// udp_open (over a lane that carries messages) → the machine's OpenUdpLane
// → the lane joins the receiver's shared UDP port on the address the sender
// named (one this host advertised, or the one it was reached on) and the
// TCP listener's port number (udp_recv_port.hpp; a free port of its own if
// that one is taken), answered with udp_ready. The lane listens to the
// first source whose datagram authenticates with the lane's keys. Each
// piece's bytes are gathered in memory (UdpPieceAssembly) from the port's
// thread; the header comes through the machine (ExpectPiece); a whole piece
// is verified and written on the session's writer thread, never the port's,
// which serves every session's lanes on its address. The sender's scheduler
// learns from the lane's transport acks; only a piece that fails its hash
// is reported (the machine's lane_ack).
#include "engine/lanes/endpoint.hpp"
#include "engine/transfer/lane_lookup.hpp"
#include "engine/transfer/receiver_session_lanes.hpp"

namespace braid::transfer {

using Clock = std::chrono::steady_clock;

void ReceiverSession::open_udp_lane(const session::OpenUdpLane& a) {
  std::string error;
  auto answer = [&](const std::string& local) {
    feed([&](session::Receiver& m) { m.handle_udp_lane_opened(a.lane, local, error, now()); });
  };
  auto where = lanes::parse_numeric_endpoint(a.address, 0);
  if (!where || where->is_wildcard()) {
    error = "not an address: " + a.address;
    return answer("");
  }
  int via_fd = -1;
  UdpLane* u = nullptr;
  {
    std::lock_guard lock(mu_);
    if (Lane* via = find_lane_by_id(lanes_, a.via)) via_fd = via->link->fd();
    // Only an address we offered (or the one the sender reached): it cannot make us bind elsewhere.
    bool ours = via_fd >= 0 && where->same_host(lanes::local_endpoint_of(via_fd));
    for (const auto& ad : advertised_)
      if (auto e = lanes::parse_numeric_endpoint(ad, 0); e && e->same_host(*where)) ours = true;
    if (!ours) {
      error = "not an address of this receiver: " + where->host();
    } else {
      auto lane = std::make_unique<UdpLane>();
      lane->id = a.lane;
      lane->events = std::make_unique<UdpEvents>(*this, *lane);
      lane->buffers = piece_buffers_;
      u = lane.get();
      udp_lanes_.push_back(std::move(lane));
    }
  }
  if (!u) return answer("");
  udp::UdpLaneConfig cfg;
  cfg.lane_id = a.lane;
  cfg.session_id = session_id_;
  cfg.lane_secret = secret_;
  cfg.role = security::Role::server;
  cfg.packet_size = udp::kMaxPacketSize;  // receives what the sender chose
  std::unique_ptr<udp::UdpRecvLane> lane;
  if (cfg_.udp_ports && via_fd >= 0) {
    // The port number the sender reached us on for TCP (the one its address
    // names, if we listen there; else lane `via`'s), shared with every UDP
    // lane on that address: one port, TCP and UDP, is all a firewall must let in.
    // (A lane over a Unix socket has no port: the first listener's then.)
    const lanes::Endpoint via_local = lanes::local_endpoint_of(via_fd);
    uint16_t port = via_local.family() == AF_INET || via_local.family() == AF_INET6 ? via_local.port()
                    : cfg_.listen_ports.empty()                                     ? 0
                                                                                    : cfg_.listen_ports[0];
    for (uint16_t p : cfg_.listen_ports)
      if (p == where->port()) port = p;
    where->set_port(port);
    const udp::SocketAddress local = *udp::SocketAddress::parse(where->str());
    if (auto shared = cfg_.udp_ports->get(local, error)) {
      lane = udp::UdpRecvLane::start_on(std::move(shared), cfg, *u->events, error);
    } else {
      log_.write("udp_port_fallback", {{"lane", a.lane}, {"local", local.str()}, {"reason", error}});
      note("UDP port " + local.str() + " unavailable (" + error + "): lane " + std::to_string(a.lane) +
           " takes a free port");
    }
  }
  if (!lane) {
    error.clear();
    where->set_port(0);
    cfg.local = *udp::SocketAddress::parse(where->str());
    lane = udp::UdpRecvLane::start(cfg, *u->events, error);
  }
  std::string local;
  {
    std::lock_guard lock(mu_);
    if (lane) {
      u->local = local = lane->local_address().str();
      u->lane = std::move(lane);
    } else {
      u->alive = false;
      u->close_reason = error;
    }
  }
  answer(local);
}

void ReceiverSession::expect_udp_piece(const wire::UdpPiece& m) {
  UdpLane* u = nullptr;
  std::shared_ptr<IncomingTransfer> t;
  {
    std::lock_guard lock(mu_);
    u = find_lane_by_id(udp_lanes_, m.lane_id);
    t = transfer_locked(m.transfer_id);
  }
  if (!u || !t || t->over) return;
  const uint64_t key = (static_cast<uint64_t>(m.transfer_id) << 32) | m.piece;
  bool complete = false;
  {
    std::lock_guard lock(u->mu);
    // Whole already and with the writer (a header sent again on a new lane):
    // nothing to gather. A copy that failed its hash left `done` there.
    if (u->done.count(key)) return;
    auto it = u->pieces.find(key);
    if (it == u->pieces.end()) it = u->pieces.emplace(key, u->new_piece(t, m.chunk)).first;
    it->second.assembly.set_header(m.piece_offset, m.piece_length, m.hash);
    complete = it->second.assembly.complete();
  }
  if (complete) finish_udp_piece(*u, key);
}

size_t ReceiverSession::on_udp_data(UdpLane& u, uint64_t piece, uint64_t offset, std::span<const uint8_t> bytes) {
  std::shared_ptr<IncomingTransfer> t;
  {
    std::lock_guard lock(mu_);
    t = transfer_locked(static_cast<uint32_t>(piece >> 32));
  }
  if (!t || t->over) return bytes.size();  // not accepted, a stray range, or over: dropped, consumed
  const uint64_t total = t->total();
  if (offset >= total || bytes.size() > total - offset) return bytes.size();
  bool complete = false;
  uint64_t grew = 0;
  {
    std::lock_guard lock(u.mu);
    if (u.done.count(piece)) return bytes.size();  // a late duplicate of a finished piece
    auto it = u.pieces.find(piece);
    if (it == u.pieces.end()) it = u.pieces.emplace(piece, u.new_piece(t, offset / t->chunk_size)).first;
    const uint64_t before = it->second.assembly.buffered_bytes();
    it->second.assembly.add(offset, bytes);
    complete = it->second.assembly.complete();
    grew = it->second.assembly.buffered_bytes() - before;
    udp_gathering_ += grew;  // under u.mu: finish_udp_piece takes it off under the same lock
  }
  if (grew > 0) {  // memory grows only when a piece's buffer is made: the peak then
    std::lock_guard lock(mu_);
    udp_buffered_peak_ = std::max(udp_buffered_peak_, udp_gathering_.load() + udp_writer_->queued_bytes());
  }
  if (complete) finish_udp_piece(u, piece);
  if (!udp_backlogged()) return bytes.size();
  // Behind (the writer, or pieces whose headers have not come): hold the
  // credit. Checked again after holding, so a writer that caught up in
  // between cannot leave it held with nothing left to release it.
  u.held_credit.fetch_add(bytes.size());
  if (udp_backlogged()) return 0;
  return static_cast<size_t>(u.held_credit.exchange(0));  // may include bytes held before: all consumed now
}

bool ReceiverSession::udp_backlogged() const {
  // Pieces gathering are normally a piece or two per lane; many more means
  // their headers are not coming (no lane carries messages for a while):
  // the senders' windows stop there rather than memory growing with the gap.
  return udp_writer_->queued_bytes() > kUdpWriteBacklog || udp_gathering_.load() > kUdpGatherLimit;
}

void ReceiverSession::release_udp_credit() {
  if (udp_backlogged()) return;
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
    udp_gathering_ -= p->assembly.buffered_bytes();  // the writer's queue counts it now
  }
  const auto took =
      elapsed_since(p->first_byte);
  // Verify, write and count on the writer: pwrite, the resume journal and a
  // reply over a TCP lane may block, and the port's thread serves every
  // session's lanes on its address.
  udp_writer_->post(
      [this, &u, lane = u.id, key, p, took] {
        IncomingTransfer& t = *p->t;
        if (t.over) return;
        const uint32_t piece = static_cast<uint32_t>(key & 0xffffffffu);
        bool write = true;
        {
          std::lock_guard lock(mu_);
          write = !machine_->piece_verified(t.id, piece);  // another lane brought it first
        }
        const bool ok = p->assembly.hash_ok();
        if (!ok) {
          std::lock_guard lock(u.mu);
          u.done.erase(key);  // the copy the sender sends again is gathered anew
        }
        piece_arrived(lane, t, piece, p->assembly.offset(), p->assembly.bytes(), p->assembly.digest(), ok, write, took);
      },
      p->assembly.length());
}

ReceiverSession::UdpLane::Piece ReceiverSession::UdpLane::new_piece(const std::shared_ptr<IncomingTransfer>& t,
                                                                     uint64_t chunk) const {
  const uint64_t size = t->chunk_size, total = t->total();
  const uint64_t at = std::min(chunk * size, total);
  return UdpLane::Piece{UdpPieceAssembly(t->hash, at, std::min(size, total - at), buffers), Clock::now(), t};
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
    std::erase_if(u->pieces, [&](const auto& p) {
      if ((p.first >> 32) != transfer_id) return false;
      udp_gathering_ -= p.second.assembly.buffered_bytes();
      return true;
    });
  }
}

void ReceiverSession::on_udp_closed(UdpLane& u, const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    if (!u.alive && !u.close_reason.empty()) return;  // the machine closed it: it knows
    u.alive = false;
    u.close_reason = reason;
  }
  // The machine tells the sender (over a lane that can block): not on the port's thread.
  udp_writer_->post([this, id = u.id, reason] {
    drive([&](session::Receiver& m) { m.handle_lane_failed(id, reason, now()); });
  });
}

}  // namespace braid::transfer
