// The sending lane's record of the pieces it carries: where each piece's
// bytes are (so payload slots can be filled, also for resends) and how many
// of its bytes the peer has not yet acknowledged. A piece is acked when all
// its bytes are (LaneSender::acked_data reports each byte once).
//
// Owned by the lane's I/O thread; no locking. One hash-map entry per piece
// (an allocation per piece, never per packet).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>

#include "core/transport/wire.hpp"

namespace braid::udp {

class PieceLedger {
 public:
  /// Records piece `piece`: `length` bytes at `offset`, readable at `bytes`
  /// (kept alive until the piece is acked or cancelled). False if the piece
  /// is already here (the caller must not send one piece twice at once).
  bool add(uint64_t piece, uint64_t offset, uint64_t length, std::shared_ptr<const uint8_t> bytes);
  /// Where the payload of `range` lives (range.length bytes, valid while the
  /// piece is held), to be sealed from there into a datagram without a copy.
  /// nullptr if the piece is unknown or the range lies outside it.
  const uint8_t* bytes_of(const transport::DataRange& range);
  /// Marks `range` acknowledged. Returns true once: when the last unacked
  /// byte of its piece is acked (the piece is then forgotten).
  bool on_acked(const transport::DataRange& range);
  /// First time a payload of the piece goes out: true (for on_piece_started).
  bool mark_started(uint64_t piece);
  /// Forgets the piece (cancel); false if it was not here.
  bool remove(uint64_t piece);

  size_t size() const { return pieces_.size(); }
  bool contains(uint64_t piece) const { return pieces_.count(piece) != 0; }

 private:
  struct Entry {
    uint64_t offset = 0;
    uint64_t length = 0;
    uint64_t unacked = 0;
    bool started = false;
    std::shared_ptr<const uint8_t> bytes;
  };
  Entry* find(uint64_t piece);

  std::unordered_map<uint64_t, Entry> pieces_;
  // Consecutive packets almost always carry the same piece: skip the hash.
  uint64_t last_piece_ = 0;
  Entry* last_ = nullptr;
};

}  // namespace braid::udp
