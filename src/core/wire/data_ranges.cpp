#include "core/wire/data_ranges.hpp"

#include <algorithm>

namespace braid::wire {

bool valid_data_ranges(const std::vector<DataRange>& ranges, uint64_t size) {
  uint64_t end = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const DataRange& r = ranges[i];
    if (r.length == 0 || r.offset > size || r.length > size - r.offset) return false;
    if (i > 0 && r.offset <= end) return false;
    end = r.offset + r.length;
  }
  return true;
}

std::optional<std::vector<DataRange>> data_ranges_to_offer(std::vector<DataRange> found, uint64_t size, size_t max) {
  std::vector<DataRange> clipped;
  for (const auto& r : found) {
    if (r.offset >= size || r.length == 0) continue;
    clipped.push_back(DataRange{r.offset, std::min(r.length, size - r.offset)});
  }
  std::sort(clipped.begin(), clipped.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  std::vector<DataRange> out;
  for (const auto& r : clipped) {
    if (!out.empty() && r.offset <= out.back().offset + out.back().length) {
      const uint64_t end = std::max(out.back().offset + out.back().length, r.offset + r.length);
      out.back().length = end - out.back().offset;
    } else {
      out.push_back(r);
    }
  }
  if (size == 0 || out.size() > max) return std::nullopt;
  if (out.size() == 1 && out[0].offset == 0 && out[0].length == size) return std::nullopt;
  return out;
}

std::vector<DataRange> holes_of(const ManifestEntry& e) {
  std::vector<DataRange> out;
  if (e.kind != EntryKind::file || !e.data) return out;
  uint64_t at = 0;
  for (const auto& r : *e.data) {
    if (r.offset > at) out.push_back(DataRange{at, r.offset - at});
    at = r.offset + r.length;
  }
  if (e.size > at) out.push_back(DataRange{at, e.size - at});
  return out;
}

}  // namespace braid::wire
