// The byte ranges of a transfer the receiver holds verified on disk from an
// earlier run, each with its piece hash: disjoint, by offset. A range is
// whole or gone — bytes written over any part of it end the claim on all
// of it, because its hash no longer describes what is on disk.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "engine/files/piece_hasher.hpp"

namespace braid::files {

class HeldRanges {
 public:
  /// Adds `r` (length > 0); any range it overlaps goes (the later one wins:
  /// its bytes were written last).
  void add(const PieceRecord& r);
  /// Removes every range overlapping [offset, offset+length) and returns them.
  std::vector<PieceRecord> remove_overlapping(uint64_t offset, uint64_t length);
  bool overlaps(uint64_t offset, uint64_t length) const;

  bool empty() const { return by_offset_.empty(); }
  size_t size() const { return by_offset_.size(); }
  uint64_t bytes() const { return bytes_; }
  /// Sorted by offset.
  std::vector<PieceRecord> records() const;

 private:
  // Iterator range of the entries overlapping [offset, end).
  std::pair<std::map<uint64_t, PieceRecord>::iterator, std::map<uint64_t, PieceRecord>::iterator> overlapping(
      uint64_t offset, uint64_t end);

  std::map<uint64_t, PieceRecord> by_offset_;
  uint64_t bytes_ = 0;
};

}  // namespace braid::files
