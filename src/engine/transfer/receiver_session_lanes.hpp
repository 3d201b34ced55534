// The receiver session's lanes, as its files share them (not a public
// interface): a TCP or stream lane read by its own thread, and a UDP lane
// fed by its shared port's thread. Fields marked "mu_" are the session's.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "engine/compress/frame_codec.hpp"
#include "engine/files/piece_hasher.hpp"
#include "engine/transfer/receiver_session.hpp"
#include "engine/transfer/udp_piece_assembly.hpp"
#include "engine/udp/udp_recv_lane.hpp"

namespace braid::transfer {

// How far UDP lanes' finished pieces may queue for the writer before the
// lanes stop counting new bytes as consumed (their senders' windows stop
// sliding: a disk slower than the network slows the senders down, and
// memory stays bounded by this plus each lane's window).
constexpr uint64_t kUdpWriteBacklog = 64ull << 20;
// How many bytes of UDP pieces not yet whole (or whole but without their
// header) may be held before the lanes stop crediting: normally a piece or
// two per lane are on their way; more means headers are missing (no lane
// carries messages for a while) and memory would grow with the gap.
constexpr uint64_t kUdpGatherLimit = 64ull << 20;

/// Time since `since`, for a piece's first-to-last-byte duration.
inline Duration elapsed_since(std::chrono::steady_clock::time_point since) {
  return Duration::nanos(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - since).count());
}

struct ReceiverSession::Lane {
  uint32_t id = 0;
  session::LaneTraits traits;
  std::unique_ptr<lanes::LaneLink> link;
  std::string local, remote;
  bool open = true;          // mu_
  std::string close_reason;  // mu_
  std::thread reader;
  bool reader_ended = false;  // mu_: its reader saw the lane's end
  // The reader's alone: the piece this lane is receiving (pieces arrive
  // whole, in order, per lane). Its bytes gather in `piece_bytes` and reach
  // the disk in one write once the piece's hash checks out.
  bool joined = false;  // lane_join taken (the machine said so once)
  bool receiving = false;
  uint32_t transfer = 0, piece = 0;
  uint64_t piece_offset = 0, piece_length = 0, next = 0;
  bool write = true;  // false: another copy of this piece was verified already
  std::unique_ptr<files::PieceHasher> hasher;
  std::vector<uint8_t> piece_bytes;  // reused from piece to piece (≤ one chunk)
  std::vector<uint8_t> packed;       // a compressed frame's data, moved out of the way of its file bytes
  std::unique_ptr<compress::FrameDecompressor> unpacker;  // made at the first compressed frame
  std::chrono::steady_clock::time_point first_byte;
  std::shared_ptr<IncomingTransfer> t;
};

// A UDP lane (receiving end): its socket on a port's I/O thread, and the
// pieces it is assembling (bytes from the port's thread, headers from a
// lane that carries messages, via the machine's ExpectPiece).
struct ReceiverSession::UdpLane {
  struct Piece {
    UdpPieceAssembly assembly;
    std::chrono::steady_clock::time_point first_byte;
    std::shared_ptr<IncomingTransfer> t;
  };
  uint32_t id = 0;
  std::unique_ptr<UdpEvents> events;
  std::unique_ptr<udp::UdpRecvLane> lane;  // mu_
  std::string local;
  bool alive = true;         // mu_
  std::string close_reason;  // mu_
  std::mutex mu;             // pieces, done
  std::map<uint64_t, Piece> pieces;  // by lane piece id: transfer << 32 | piece
  std::set<uint64_t> done;           // handed to the writer; late duplicates of these are dropped
  /// Bytes taken in while the writer was behind, not yet counted as
  /// consumed: the sender's window stops sliding until the writer catches up.
  std::atomic<uint64_t> held_credit{0};

  /// The session's piece buffers, shared by its UDP lanes.
  std::shared_ptr<PieceBuffers> buffers;

  /// A piece of chunk `chunk` of transfer `t`, before anything is known of it.
  Piece new_piece(const std::shared_ptr<IncomingTransfer>& t, uint64_t chunk) const;
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

template <class F>
inline void ReceiverSession::feed(F&& f) {
  std::lock_guard lock(mu_);
  if (!machine_) return;
  f(*machine_);
  while (auto a = machine_->poll_action()) acting_.push_back(std::move(*a));
}

template <class F>
inline void ReceiverSession::drive(F&& f) {
  std::lock_guard order(act_mu_);
  feed(std::forward<F>(f));
  while (!acting_.empty()) {
    session::ReceiverAction a = std::move(acting_.front());
    acting_.pop_front();
    std::visit([this](auto& x) { act(x); }, a);
  }
}

}  // namespace braid::transfer
