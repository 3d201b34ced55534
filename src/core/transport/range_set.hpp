// A sorted set of disjoint, inclusive integer ranges: the receiver's record of
// packet numbers seen (the source of ACK ranges) and, in tests and the
// simulator, the byte ranges of a stream that have arrived.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace braid::transport {

struct Range {
  uint64_t lo = 0;  // first value in the range
  uint64_t hi = 0;  // last value in the range (inclusive)
  uint64_t size() const { return hi - lo + 1; }
  bool operator==(const Range&) const = default;
};

class RangeSet {
 public:
  /// `max_ranges` bounds memory: once exceeded, the lowest ranges are forgotten
  /// (0 = unbounded). Storage is reserved up front, so inserts do not allocate.
  explicit RangeSet(size_t max_ranges = 0);

  /// Adds [lo, hi]; returns how many values were new.
  uint64_t insert(uint64_t lo, uint64_t hi);
  uint64_t insert(uint64_t v) { return insert(v, v); }

  bool contains(uint64_t v) const;
  bool empty() const { return ranges_.empty(); }
  size_t range_count() const { return ranges_.size(); }
  /// Ranges in ascending order.
  const std::vector<Range>& ranges() const { return ranges_; }
  uint64_t largest() const { return ranges_.empty() ? 0 : ranges_.back().hi; }
  uint64_t smallest() const { return ranges_.empty() ? 0 : ranges_.front().lo; }
  /// True if `v` is below everything still remembered (forgotten or never seen).
  bool below_window(uint64_t v) const { return forgot_any_ && v < smallest(); }
  /// Forgets every value below `v`.
  void remove_below(uint64_t v);

 private:
  std::vector<Range> ranges_;
  size_t max_ranges_;
  bool forgot_any_ = false;
};

}  // namespace braid::transport
