#include "engine/udp/piece_ledger.hpp"

namespace braid::udp {

PieceLedger::Entry* PieceLedger::find(uint64_t piece) {
  if (last_ && last_piece_ == piece) return last_;
  auto it = pieces_.find(piece);
  if (it == pieces_.end()) return nullptr;
  last_piece_ = piece;
  last_ = &it->second;  // unordered_map never moves its elements
  return last_;
}

bool PieceLedger::add(uint64_t piece, uint64_t offset, uint64_t length, std::shared_ptr<const uint8_t> bytes) {
  if (pieces_.count(piece)) return false;
  pieces_.emplace(piece, Entry{offset, length, length, false, std::move(bytes)});
  return true;
}

const uint8_t* PieceLedger::bytes_of(const transport::DataRange& range) {
  Entry* e = find(range.piece);
  if (!e || range.offset < e->offset || range.offset + range.length > e->offset + e->length) return nullptr;
  return e->bytes.get() + (range.offset - e->offset);
}

bool PieceLedger::on_acked(const transport::DataRange& range) {
  Entry* e = find(range.piece);
  if (!e) return false;  // cancelled meanwhile
  e->unacked -= std::min<uint64_t>(e->unacked, range.length);
  if (e->unacked != 0) return false;
  remove(range.piece);
  return true;
}

bool PieceLedger::mark_started(uint64_t piece) {
  Entry* e = find(piece);
  if (!e || e->started) return false;
  e->started = true;
  return true;
}

bool PieceLedger::remove(uint64_t piece) {
  if (last_piece_ == piece) last_ = nullptr;
  return pieces_.erase(piece) != 0;
}

}  // namespace braid::udp
