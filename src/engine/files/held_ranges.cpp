#include "engine/files/held_ranges.hpp"

namespace braid::files {

std::pair<std::map<uint64_t, PieceRecord>::iterator, std::map<uint64_t, PieceRecord>::iterator>
HeldRanges::overlapping(uint64_t offset, uint64_t end) {
  // Ranges are disjoint: only the one starting before `offset` can reach into it.
  auto first = by_offset_.lower_bound(offset);
  if (first != by_offset_.begin()) {
    auto before = std::prev(first);
    if (before->first + before->second.length > offset) first = before;
  }
  return {first, by_offset_.lower_bound(end)};
}

void HeldRanges::add(const PieceRecord& r) {
  if (r.length == 0) return;
  remove_overlapping(r.offset, r.length);
  by_offset_.emplace(r.offset, r);
  bytes_ += r.length;
}

std::vector<PieceRecord> HeldRanges::remove_overlapping(uint64_t offset, uint64_t length) {
  std::vector<PieceRecord> gone;
  if (length == 0) return gone;
  const uint64_t end = offset + length < offset ? UINT64_MAX : offset + length;
  auto [first, last] = overlapping(offset, end);
  for (auto it = first; it != last; ++it) {
    gone.push_back(it->second);
    bytes_ -= it->second.length;
  }
  by_offset_.erase(first, last);
  return gone;
}

bool HeldRanges::overlaps(uint64_t offset, uint64_t length) const {
  if (length == 0 || by_offset_.empty()) return false;
  const uint64_t end = offset + length < offset ? UINT64_MAX : offset + length;
  auto it = by_offset_.lower_bound(offset);
  if (it != by_offset_.end() && it->first < end) return true;
  if (it == by_offset_.begin()) return false;
  --it;
  return it->first + it->second.length > offset;
}

std::vector<PieceRecord> HeldRanges::records() const {
  std::vector<PieceRecord> out;
  out.reserve(by_offset_.size());
  for (const auto& [off, r] : by_offset_) out.push_back(r);
  return out;
}

}  // namespace braid::files
