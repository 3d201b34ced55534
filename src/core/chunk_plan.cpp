#include "core/chunk_plan.hpp"

#include <algorithm>
#include <cassert>

namespace braid::core {

ChunkPlan::ChunkPlan(Bytes total, Bytes chunk_size) : total_(total), chunk_size_(chunk_size) {
  assert(chunk_size.count() > 0);
  const uint64_t n = (total.count() + chunk_size.count() - 1) / chunk_size.count();
  pieces_.reserve(n + 64);
  chunk_delivered_.assign(n, 0);
  for (uint64_t c = 0; c < n; ++c) {
    const Bytes off(c * chunk_size.count());
    const Bytes len = std::min(chunk_size, total - off);
    pieces_.push_back(Piece{static_cast<ChunkIndex>(c), off, len, PieceState::pending, false});
    pending_.push_back(static_cast<PieceId>(c));
  }
  unassigned_bytes_ = total;
}

Bytes ChunkPlan::delivered_prefix() const {
  while (prefix_chunks_ < chunk_count() && chunk_delivered(prefix_chunks_)) ++prefix_chunks_;
  return std::min(total_, Bytes(uint64_t{prefix_chunks_} * chunk_size_.count()));
}

std::vector<std::optional<PieceId>> ChunkPlan::extend(Bytes new_total, const std::vector<ByteRange>& delivered) {
  std::vector<std::optional<PieceId>> out(delivered.size());
  if (new_total <= total_) return out;
  assert(total_.count() % chunk_size_.count() == 0);
  const Bytes old_total = total_;
  const uint64_t first = chunk_delivered_.size();
  const auto first_piece = static_cast<PieceId>(pieces_.size());
  const size_t queued = pending_.size();
  const uint64_t n = (new_total.count() + chunk_size_.count() - 1) / chunk_size_.count();
  unassigned_bytes_ += new_total - total_;
  total_ = new_total;
  chunk_delivered_.resize(n, 0);
  for (uint64_t c = first; c < n; ++c) {
    const Bytes off(c * chunk_size_.count());
    const Bytes len = std::min(chunk_size_, total_ - off);
    pending_.push_back(static_cast<PieceId>(pieces_.size()));
    pieces_.push_back(Piece{static_cast<ChunkIndex>(c), off, len, PieceState::pending, false});
  }
  if (delivered.empty()) return out;
  // As mark_resumed, on the new chunks alone: none of them was handed out.
  std::vector<std::vector<PieceId>> by_chunk(n);
  for (PieceId id = first_piece; id < pieces_.size(); ++id) by_chunk[pieces_[id].chunk].push_back(id);
  for (size_t i = 0; i < delivered.size(); ++i)
    if (delivered[i].offset >= old_total) out[i] = resume_one(delivered[i], by_chunk);
  // Their pending pieces, in transfer order, behind every piece there was.
  pending_.resize(queued);
  std::vector<PieceId> added;
  for (PieceId id = first_piece; id < pieces_.size(); ++id)
    if (pieces_[id].state == PieceState::pending) added.push_back(id);
  std::sort(added.begin(), added.end(), [this](PieceId a, PieceId b) { return pieces_[a].offset < pieces_[b].offset; });
  pending_.insert(pending_.end(), added.begin(), added.end());
  return out;
}

Bytes ChunkPlan::chunk_length(ChunkIndex c) const {
  const Bytes off(uint64_t{c} * chunk_size_.count());
  return std::min(chunk_size_, total_ - off);
}

std::optional<PieceId> ChunkPlan::next_overdue() const {
  if (overdue_.empty()) return std::nullopt;
  return overdue_.front();
}

std::optional<PieceId> ChunkPlan::next_pending() const {
  if (pending_.empty()) return std::nullopt;
  return pending_.front();
}

PieceId ChunkPlan::split(PieceId id, Bytes head) {
  Piece& p = pieces_[id];
  assert(p.state == PieceState::pending && !p.ever_assigned);
  if (head.count() == 0 || head >= p.length) return id;
  Piece tail{p.chunk, p.offset + head, p.length - head, PieceState::pending, false};
  p.length = head;
  const auto tail_id = static_cast<PieceId>(pieces_.size());
  pieces_.push_back(tail);
  auto it = std::find(pending_.begin(), pending_.end(), id);
  assert(it != pending_.end());
  pending_.insert(it + 1, tail_id);
  return id;
}

void ChunkPlan::remove_from_queues(PieceId id) {
  auto erase_from = [id](std::deque<PieceId>& q) {
    // The piece is nearly always at the front: the scheduler takes from there.
    if (!q.empty() && q.front() == id) {
      q.pop_front();
      return;
    }
    if (auto it = std::find(q.begin(), q.end(), id); it != q.end()) q.erase(it);
  };
  erase_from(pending_);
  erase_from(overdue_);
}

void ChunkPlan::mark_in_flight(PieceId id) {
  started_ = true;
  Piece& p = pieces_[id];
  if (p.state == PieceState::pending || p.state == PieceState::overdue) {
    remove_from_queues(id);
    unassigned_bytes_ -= p.length;
  }
  if (p.state != PieceState::delivered) p.state = PieceState::in_flight;
  p.ever_assigned = true;
}

void ChunkPlan::mark_overdue(PieceId id) {
  Piece& p = pieces_[id];
  if (p.state != PieceState::in_flight) return;
  p.state = PieceState::overdue;
  overdue_.push_back(id);
  unassigned_bytes_ += p.length;
}

void ChunkPlan::mark_pending_again(PieceId id) {
  Piece& p = pieces_[id];
  if (p.state != PieceState::in_flight) return;
  p.state = PieceState::pending;
  pending_.push_front(id);
  unassigned_bytes_ += p.length;
}

bool ChunkPlan::mark_delivered(PieceId id) {
  Piece& p = pieces_[id];
  if (p.state == PieceState::delivered) return false;
  if (p.state == PieceState::overdue || p.state == PieceState::pending) {
    remove_from_queues(id);
    unassigned_bytes_ -= p.length;
  }
  p.state = PieceState::delivered;
  delivered_bytes_ += p.length;
  chunk_delivered_[p.chunk] += p.length.count();
  if (chunk_delivered_[p.chunk] == chunk_length(p.chunk).count()) ++delivered_chunks_;
  return true;
}

PieceId ChunkPlan::cut(PieceId id, Bytes at) {
  Piece& p = pieces_[id];
  assert(at > p.offset && at < p.offset + p.length);
  Piece tail{p.chunk, at, p.offset + p.length - at, PieceState::pending, false};
  p.length = at - p.offset;
  pieces_.push_back(tail);
  return static_cast<PieceId>(pieces_.size() - 1);
}

std::optional<PieceId> ChunkPlan::resume_one(const ByteRange& r, std::vector<std::vector<PieceId>>& by_chunk) {
  if (r.length.count() == 0 || r.offset >= total_ || r.length > total_ - r.offset) return std::nullopt;
  const uint64_t c = r.offset.count() / chunk_size_.count();
  if ((r.offset + r.length - Bytes(1)).count() / chunk_size_.count() != c) return std::nullopt;  // crosses a chunk
  std::vector<PieceId>& in_chunk = by_chunk[c];
  if (in_chunk.empty()) in_chunk.push_back(static_cast<PieceId>(c));  // uncut: the chunk's own piece
  // The pending piece of this chunk that holds the whole range, if any.
  auto holder = std::find_if(in_chunk.begin(), in_chunk.end(), [&](PieceId id) {
    const Piece& p = pieces_[id];
    return p.state == PieceState::pending && r.offset >= p.offset && r.offset + r.length <= p.offset + p.length;
  });
  if (holder == in_chunk.end()) return std::nullopt;  // overlaps a range taken before
  PieceId mid = *holder;
  if (r.offset > pieces_[mid].offset) {
    mid = cut(mid, r.offset);
    in_chunk.push_back(mid);
  }
  if (r.offset + r.length < pieces_[mid].offset + pieces_[mid].length) in_chunk.push_back(cut(mid, r.offset + r.length));
  Piece& done = pieces_[mid];
  done.state = PieceState::delivered;
  unassigned_bytes_ -= done.length;
  delivered_bytes_ += done.length;
  chunk_delivered_[c] += done.length.count();
  if (chunk_delivered_[c] == chunk_length(static_cast<ChunkIndex>(c)).count()) ++delivered_chunks_;
  return mid;
}

std::vector<std::optional<PieceId>> ChunkPlan::mark_resumed(const std::vector<ByteRange>& ranges) {
  std::vector<std::optional<PieceId>> out(ranges.size());
  if (started_ || ranges.empty()) return out;
  // Pieces per chunk: a range finds its piece among the few its chunk has
  // been cut into. While no chunk is cut, a chunk's list is filled only
  // when a range touches it (see resume_one).
  std::vector<std::vector<PieceId>> by_chunk(chunk_delivered_.size());
  if (pieces_.size() > chunk_delivered_.size())
    for (PieceId id = 0; id < pieces_.size(); ++id) by_chunk[pieces_[id].chunk].push_back(id);
  for (size_t i = 0; i < ranges.size(); ++i) out[i] = resume_one(ranges[i], by_chunk);
  // Nothing was handed out yet, so the pending queue is every pending piece
  // in transfer order: rebuild it once rather than edit it per range.
  pending_.clear();
  for (PieceId id = 0; id < pieces_.size(); ++id)
    if (pieces_[id].state == PieceState::pending) pending_.push_back(id);
  std::sort(pending_.begin(), pending_.end(),
            [this](PieceId a, PieceId b) { return pieces_[a].offset < pieces_[b].offset; });
  return out;
}

}  // namespace braid::core
