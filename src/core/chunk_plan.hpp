// The chunk plan: which bytes of a transfer exist, how they are cut into
// chunks and pieces, and the delivery state of each.
//
// A transfer of N bytes (one or many files laid end to end) is cut into chunks
// of `chunk_size` (the unit the receiver verifies by hash). The scheduler hands
// out *pieces*: a piece is a whole chunk or, near the end of a transfer, a byte
// range of one, so that several lanes can finish together. Pieces are disjoint
// and a piece that has ever been handed out is never split again, so an ack for
// a piece always means the same bytes.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "core/units.hpp"

namespace braid::core {

using ChunkIndex = uint32_t;
using PieceId = uint32_t;

enum class PieceState : uint8_t {
  pending,    // never handed out, or handed back without any byte sent
  in_flight,  // carried by at least one lane
  overdue,    // its lane stalled; waits for another lane (a late ack may still land)
  delivered,  // acknowledged by the receiver
};

/// A byte range of the transfer.
struct ByteRange {
  Bytes offset;
  Bytes length;
  bool operator==(const ByteRange&) const = default;
};

struct Piece {
  ChunkIndex chunk = 0;
  Bytes offset;  // from the start of the transfer
  Bytes length;
  PieceState state = PieceState::pending;
  bool ever_assigned = false;
};

class ChunkPlan {
 public:
  /// Smallest and largest chunk sizes accepted (the `--chunk` bounds).
  static constexpr Bytes kMinChunk = Bytes::kib(64);
  static constexpr Bytes kMaxChunk = Bytes::mib(64);

  ChunkPlan(Bytes total, Bytes chunk_size);

  Bytes total() const { return total_; }
  Bytes chunk_size() const { return chunk_size_; }
  uint32_t chunk_count() const { return static_cast<uint32_t>(chunk_delivered_.size()); }
  Bytes chunk_length(ChunkIndex c) const;

  const Piece& piece(PieceId id) const { return pieces_[id]; }
  size_t piece_count() const { return pieces_.size(); }

  /// Next piece waiting to be handed out: overdue pieces first (they are late
  /// already), then pending ones in transfer order.
  std::optional<PieceId> next_overdue() const;
  std::optional<PieceId> next_pending() const;
  const std::deque<PieceId>& overdue() const { return overdue_; }

  /// Bytes not yet handed to any lane (pending + overdue without a live copy).
  Bytes unassigned_bytes() const { return unassigned_bytes_; }
  Bytes delivered_bytes() const { return delivered_bytes_; }
  bool complete() const { return delivered_bytes_ == total_; }
  uint32_t delivered_chunks() const { return delivered_chunks_; }
  bool chunk_delivered(ChunkIndex c) const { return chunk_delivered_[c] == chunk_length(c).count(); }
  /// Where the first chunk not wholly delivered begins (total() once every
  /// chunk is): no byte before it is read again, so a sender may let go of
  /// the files that lie wholly before it (issue 18). Amortized O(1): it only
  /// moves forward.
  Bytes delivered_prefix() const;

  /// Cuts the first `head` bytes off a pending piece that was never handed out.
  /// The piece keeps the head; the tail becomes a new pending piece right
  /// behind it. Returns the id of the head (unchanged).
  PieceId split(PieceId id, Bytes head);

  /// Moves a piece out of the pending/overdue queues onto a lane.
  void mark_in_flight(PieceId id);
  /// A stalled or dropped piece goes to the overdue queue.
  void mark_overdue(PieceId id);
  /// A piece whose every copy was dropped before any byte left goes back to the
  /// front of the pending queue: nothing about it is late.
  void mark_pending_again(PieceId id);
  /// Returns true the first time a piece is delivered (false for a duplicate).
  bool mark_delivered(PieceId id);

  /// Resume: ranges the receiver already holds (and the sender checked)
  /// become delivered pieces of their own before any piece is handed out,
  /// so every later ack, and the root hash, sees exactly those bytes as one
  /// piece each. A range is taken only if it is non-empty, inside one chunk
  /// and disjoint from every range taken before it; the rest of its chunk
  /// stays pending (as one or two shorter pieces). Returns, per range in
  /// the order given, its new piece id or nothing if it was not taken.
  /// Takes nothing once a piece has been handed out.
  std::vector<std::optional<PieceId>> mark_resumed(const std::vector<ByteRange>& ranges);
  /// True once any piece has been handed to a lane.
  bool started() const { return started_; }

  /// The transfer grew (an offer answered part by part, protocol 9): the
  /// chunks of [total(), new_total) are appended as pending pieces behind
  /// every piece there is. Only whole chunks may lie before the growth — a
  /// chunk never changes its length once it exists, so a piece handed out
  /// keeps meaning the same bytes: total() must be a multiple of the chunk
  /// size (or new_total == total(), which changes nothing). `delivered`:
  /// ranges of the new chunks delivered without being sent (the holes of
  /// sparse files), taken as mark_resumed takes ranges; per range, its
  /// piece id or nothing (not in the new chunks, or not taken).
  std::vector<std::optional<PieceId>> extend(Bytes new_total, const std::vector<ByteRange>& delivered = {});

 private:
  void remove_from_queues(PieceId id);
  /// Cuts a pending piece at transfer offset `at` without touching the queues;
  /// returns the tail's id.
  PieceId cut(PieceId id, Bytes at);
  std::optional<PieceId> resume_one(const ByteRange& r, std::vector<std::vector<PieceId>>& by_chunk);

  Bytes total_;
  Bytes chunk_size_;
  std::vector<Piece> pieces_;
  std::deque<PieceId> pending_;
  std::deque<PieceId> overdue_;
  std::vector<uint64_t> chunk_delivered_;  // bytes delivered per chunk
  Bytes unassigned_bytes_;
  Bytes delivered_bytes_;
  uint32_t delivered_chunks_ = 0;
  mutable ChunkIndex prefix_chunks_ = 0;  // delivered_prefix's cursor: chunks before it are delivered
  bool started_ = false;
};

}  // namespace braid::core
