#include "core/transport/range_set.hpp"

#include <algorithm>

namespace braid::transport {

RangeSet::RangeSet(size_t max_ranges) : max_ranges_(max_ranges) {
  ranges_.reserve(max_ranges_ ? max_ranges_ + 1 : 64);
}

uint64_t RangeSet::insert(uint64_t lo, uint64_t hi) {
  if (hi < lo) return 0;
  // Fast path: in-order arrival extends the last range or starts a new one.
  if (ranges_.empty() || lo > ranges_.back().hi) {
    if (!ranges_.empty() && lo == ranges_.back().hi + 1) {
      ranges_.back().hi = hi;
    } else {
      ranges_.push_back({lo, hi});
    }
  } else {
    // First range whose end reaches lo - 1 (adjacent ranges merge). Written
    // without r.hi + 1 and hi + 1, which wrap to 0 at 2^64 - 1 (a packet
    // number the peer may send).
    auto first = std::lower_bound(ranges_.begin(), ranges_.end(), lo,
                                  [](const Range& r, uint64_t v) { return v > 0 && r.hi < v - 1; });
    uint64_t covered = 0;
    auto last = first;
    uint64_t new_lo = lo, new_hi = hi;
    while (last != ranges_.end() && (hi == UINT64_MAX || last->lo <= hi + 1)) {
      const uint64_t olo = std::max(last->lo, lo), ohi = std::min(last->hi, hi);
      if (olo <= ohi) covered += ohi - olo + 1;
      new_lo = std::min(new_lo, last->lo);
      new_hi = std::max(new_hi, last->hi);
      ++last;
    }
    if (first == last) {
      ranges_.insert(first, Range{lo, hi});
    } else {
      *first = Range{new_lo, new_hi};
      ranges_.erase(first + 1, last);
    }
    if (max_ranges_ && ranges_.size() > max_ranges_) {
      ranges_.erase(ranges_.begin());
      forgot_any_ = true;
    }
    return (hi - lo + 1) - covered;
  }
  if (max_ranges_ && ranges_.size() > max_ranges_) {
    ranges_.erase(ranges_.begin());
    forgot_any_ = true;
  }
  return hi - lo + 1;
}

bool RangeSet::contains(uint64_t v) const {
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), v,
                             [](const Range& r, uint64_t x) { return r.hi < x; });
  return it != ranges_.end() && it->lo <= v;
}

void RangeSet::remove_below(uint64_t v) {
  auto it = ranges_.begin();
  while (it != ranges_.end() && it->hi < v) ++it;
  if (it != ranges_.begin()) forgot_any_ = true;
  ranges_.erase(ranges_.begin(), it);
  if (!ranges_.empty() && ranges_.front().lo < v) {
    ranges_.front().lo = v;
    forgot_any_ = true;
  }
}

}  // namespace braid::transport
