// The receiver session's TCP and stream lanes: each read by a thread of its
// own, which opens frames, hands messages to the machine and gathers,
// verifies and writes pieces (piece_arrived, shared with the UDP lanes).
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "engine/lanes/endpoint.hpp"
#include "engine/lanes/unix_socket.hpp"
#include "engine/transfer/lane_lookup.hpp"
#include "engine/transfer/receiver_session_lanes.hpp"
#include "engine/transfer/thread_name.hpp"

namespace braid::transfer {

using Clock = std::chrono::steady_clock;

std::unique_ptr<ReceiverSession::Lane> ReceiverSession::make_lane(std::unique_ptr<lanes::LaneLink> link,
                                                                  session::LaneTraits traits) {
  auto lane = std::make_unique<Lane>();
  lane->id = link->id();
  lane->traits = traits;
  if (lanes::is_unix_socket(link->fd())) {
    lane->local = lanes::unix_socket_name(link->fd());
    lane->remote = "unix";
  } else {
    lane->local = lanes::local_endpoint_of(link->fd()).str();
    lane->remote = lanes::peer_endpoint_of(link->fd()).str();
  }
  lane->link = std::move(link);
  return lane;
}

ReceiverSession::Lane* ReceiverSession::add_lane(std::unique_ptr<lanes::LaneLink> link, session::LaneTraits traits) {
  auto lane = make_lane(std::move(link), traits);
  Lane* l = lane.get();
  std::lock_guard lock(mu_);
  lanes_.push_back(std::move(lane));
  return l;
}

bool ReceiverSession::start_reader(Lane& l) {
  try {
    l.reader = std::thread([this, &l] {
      name_this_thread("lane " + std::to_string(l.id) + " recv");
      reader_loop(l);
      {
        std::lock_guard lock(mu_);
        l.reader_ended = true;
      }
      cv_.notify_all();
      // A closed lane stays listed until the session ends; its piece buffer
      // (up to a chunk, 64 MiB) goes now, or lanes opened and closed over and
      // over would add up.
      std::vector<uint8_t>().swap(l.piece_bytes);
      l.t.reset();
    });
  } catch (const std::system_error& e) {
    // No thread to read it: the lane never was (its fd closes with the session).
    const std::string why = std::string("no thread for its reader: ") + e.what();
    log_.write("lane_refused", {{"lane", l.id}, {"remote", l.remote}, {"reason", why}});
    drive([&](session::Receiver& m) { m.handle_lane_failed(l.id, why, now()); });
    l.link->shutdown();
    return false;
  }
  return true;
}

bool ReceiverSession::adopt_lane(security::UniqueFd fd, uint32_t lane_id) {
  const bool unix_socket = lanes::is_unix_socket(fd.get());
  if (unix_socket) {
    // No TCP_USER_TIMEOUT on a Unix socket: a send to a peer that stopped
    // reading fails after this instead of holding the session's actions.
    timeval limit{15, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  }
  std::string error;
  auto link = lanes::LaneLink::create(std::move(fd), session_id_, lane_id, secret_, security::Role::server, error);
  if (!link) return false;
  const auto traits = unix_socket ? session::LaneTraits::stream() : session::LaneTraits::tcp();
  auto lane = make_lane(std::move(link), traits);
  Lane* l = lane.get();
  {
    // Only mu_: the accept loop calls this, and the machine's answer here
    // has no actions to carry out (so no wait behind a session's sends).
    std::lock_guard lock(mu_);
    // A lane id joins once (a replayed join is refused); the connections
    // not joined yet are capped, each holding a reader.
    if (!machine_ || ended_ || !machine_->handle_lane_connected(lane_id, traits, now())) return false;
    lanes_.push_back(std::move(lane));
  }
  return start_reader(*l);
}

void ReceiverSession::reader_loop(Lane& lane) {
  // Piece bytes are decrypted straight into the lane's piece buffer where
  // they belong (after the frame's piece header), not copied there.
  lanes::Landing landing{wire::FrameType::piece_data, wire::PieceHeader::kSize, {}};
  auto fail = [&](const std::string& reason) {
    drive([&](session::Receiver& m) { m.handle_lane_failed(lane.id, reason, now()); });
  };
  for (;;) {
    landing.tail = piece_landing(lane);
    lanes::Incoming in = lane.link->read(&landing);
    if (in.status == lanes::ReadStatus::rejected) {
      log_.write("frame_rejected", {{"lane", lane.id}, {"reason", in.reason}});
      continue;
    }
    if (in.status != lanes::ReadStatus::frame) return fail(in.reason);
    if (!lane.joined) {
      // The first frame must be the lane's join (the machine checks it).
      auto msg = session::decode_to_receiver(in.type, in.payload);
      if (!msg || !std::holds_alternative<wire::LaneJoin>(*msg)) {
        log_.write("lane_refused", {{"lane", lane.id}, {"remote", lane.remote}, {"reason", "no valid lane_join"}});
        return fail("join refused");
      }
      drive([&](session::Receiver& m) {
        m.handle_message(lane.id, *msg, now());
        lane.joined = m.lane_joined(lane.id);
      });
      if (!lane.joined) return;  // refused (the cap, a wrong join): the machine closed it
      continue;
    }
    if (in.type == wire::FrameType::piece_data) {
      handle_piece(lane, in);
      continue;
    }
    if (in.type == wire::FrameType::piece_abort) {
      lane.receiving = false;
      continue;
    }
    auto msg = session::decode_to_receiver(in.type, in.payload);
    if (!msg) {
      log_.write("frame_ignored", {{"lane", lane.id}, {"type", static_cast<int>(in.type)}});
      continue;
    }
    // Taken, not copied: an offer part's entries move into the transfer.
    drive([&](session::Receiver& m) { m.handle_message(lane.id, std::move(*msg), now()); });
  }
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
  auto refuse = [&](const std::string& why) {
    lane.receiving = false;
    drive([&](session::Receiver& m) { m.handle_lane_failed(lane.id, why, now()); });
  };
  if (in.payload.size() < wire::PieceHeader::kSize) return refuse("a malformed piece frame");
  std::span<const uint8_t> data = in.landed.empty() ? in.payload.subspan(wire::PieceHeader::kSize) : in.landed;
  wire::PieceHeader h;
  if (!wire::decode_piece_header(in.payload, data.size(), h)) return refuse("a malformed piece frame");
  size_t n = data.size();
  std::vector<uint8_t> moved;  // the frame's bytes, if they sit in a piece buffer about to grow
  if (!lane.receiving || lane.transfer != h.transfer_id || lane.piece != h.piece) {
    lane.receiving = false;
    lane.t.reset();
    if (h.data_offset != h.piece_offset) return;  // the middle of a piece whose start we never saw
    std::shared_ptr<IncomingTransfer> t;
    bool verified_already = false;
    {
      std::lock_guard lock(mu_);
      t = transfer_locked(h.transfer_id);
      verified_already = t && machine_->piece_verified(h.transfer_id, h.piece);
    }
    if (!t || t->over) return;  // not accepted, or over: drop the bytes
    if (h.piece_offset + h.piece_length > t->total() || h.piece_offset + h.piece_length < h.piece_offset)
      return refuse("a piece beyond the end of the transfer");
    if (h.piece_length > t->chunk_size) return refuse("a piece larger than a chunk");
    if (lane.piece_bytes.size() < t->chunk_size) {
      if (!in.landed.empty()) data = std::span<const uint8_t>(moved = std::vector<uint8_t>(data.begin(), data.end()));
      lane.piece_bytes.resize(t->chunk_size);
    }
    if (!lane.hasher || lane.hasher->algo() != t->hash)
      lane.hasher = std::make_unique<files::PieceHasher>(t->hash);
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
    lane.write = !verified_already;
  }
  if (h.data_offset != lane.next || h.piece_offset != lane.piece_offset || h.piece_length != lane.piece_length) {
    lane.receiving = false;  // out of sequence: this copy of the piece is lost; the scheduler resends
    return;
  }
  if (n > lane.piece_offset + lane.piece_length - lane.next) {
    lane.receiving = false;  // runs past the piece's end: drop this copy
    return;
  }
  if (h.compressed()) {
    // Landed where its file bytes go: moved aside, then decompressed into
    // their place, at most up to the piece's end (no bomb), then hashed.
    const size_t room = lane.piece_offset + lane.piece_length - lane.next;
    const auto size = compress::FrameDecompressor::content_size(data, room);
    if (!size) return refuse("a malformed compressed frame");
    lane.packed.assign(data.begin(), data.end());
    if (!lane.unpacker) lane.unpacker = std::make_unique<compress::FrameDecompressor>();
    uint8_t* at = lane.piece_bytes.data() + (lane.next - lane.piece_offset);
    if (!lane.unpacker->decompress(lane.packed, std::span<uint8_t>(at, *size)))
      return refuse("a compressed frame that does not decompress");
    data = std::span<const uint8_t>(at, *size);
    n = *size;
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
  const wire::Digest got = lane.hasher->finish();
  const auto took = elapsed_since(lane.first_byte);
  piece_arrived(lane.id, *lane.t, h.piece, lane.piece_offset,
                std::span<const uint8_t>(lane.piece_bytes.data(), lane.piece_length), got, got == h.hash, lane.write,
                took);
}

// Every lane kind ends a piece here: verified bytes to disk, then counted.
void ReceiverSession::piece_arrived(uint32_t lane_id, IncomingTransfer& t, uint32_t piece, uint64_t offset,
                                    std::span<const uint8_t> bytes, const wire::Digest& hash, bool hash_ok, bool write,
                                    Duration took) {
  const uint32_t id = t.id;
  if (!hash_ok) {
    log_.write("piece_hash_mismatch", {{"lane", lane_id}, {"piece", piece}});
    return drive([&](session::Receiver& m) { m.handle_piece_rejected(lane_id, id, piece, wire::AckStatus::hash_mismatch, now()); });
  }
  if (write) {
    // The transfer ended meanwhile: nothing is written, so nothing counts.
    if (t.over) return;
    if (const std::string why = t.may_write(offset, bytes.size()); !why.empty())
      return drive([&](session::Receiver& m) { m.handle_transfer_failed(id, wire::ResultStatus::write_failed, why, now()); });
    if (const int err = t.write(offset, bytes); err != 0) {
      const bool full = err == ENOSPC || err == EDQUOT;
      const std::string why = std::string(full ? "the target disk is full: " : "cannot write to the target: ") +
                              std::strerror(err) + " (the temporary files are kept for a later resume)";
      return drive([&](session::Receiver& m) {
        m.handle_piece_rejected(lane_id, id, piece, wire::AckStatus::write_failed, now());
        m.handle_transfer_failed(id, full ? wire::ResultStatus::no_space : wire::ResultStatus::write_failed, why, now());
      });
    }
  }
  const session::PieceRecord record{offset, bytes.size(), hash};
  drive([&](session::Receiver& m) {
    const bool first = write && !m.piece_verified(id, piece);
    m.handle_piece_verified(lane_id, id, piece, record, took, now());
    if (first && t.resume && m.piece_verified(id, piece)) t.resume->verified({record.offset, record.length, record.hash});
  });
}

}  // namespace braid::transfer
