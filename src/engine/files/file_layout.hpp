// The transfer's byte space: the manifest's regular files laid end to end in
// manifest order. Maps a transfer range to the file regions it covers (a
// piece may span several small files).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/wire/messages.hpp"

namespace braid::files {

struct Extent {
  size_t entry = 0;            // index into the manifest
  uint64_t file_offset = 0;    // where in that file
  uint64_t transfer_offset = 0;
  uint64_t length = 0;
};

class FileLayout {
 public:
  FileLayout() = default;
  explicit FileLayout(const std::vector<wire::ManifestEntry>& entries) {
    for (size_t i = 0; i < entries.size(); ++i) append(entries[i], i);
  }

  /// Entry `index` of the manifest, after every entry before it: a tree
  /// that grows part by part (protocol 9) lays its files out as they come.
  void append(const wire::ManifestEntry& e, size_t index) {
    if (e.kind != wire::EntryKind::file || e.size == 0) return;
    starts_.push_back(total_);
    sizes_.push_back(e.size);
    entry_.push_back(index);
    total_ += e.size;
  }

  uint64_t total() const { return total_; }

  /// Calls fn(const Extent&) for each file region of [offset, offset+length),
  /// in order; stops and returns false as soon as fn returns false.
  /// It reads the tables afresh at each region, so a layout that only
  /// grows at its end (append) may grow between two calls of fn.
  template <class Fn>
  bool for_each(uint64_t offset, uint64_t length, Fn&& fn) const {
    if (length == 0) return true;
    auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    if (it == starts_.begin()) return false;
    size_t i = static_cast<size_t>(it - starts_.begin()) - 1;
    while (length > 0 && i < starts_.size()) {
      const uint64_t in_file = offset - starts_[i];
      const uint64_t n = std::min(length, sizes_[i] - in_file);
      if (!fn(Extent{entry_[i], in_file, offset, n})) return false;
      offset += n;
      length -= n;
      ++i;
    }
    return length == 0;
  }

 private:
  std::vector<uint64_t> starts_;
  std::vector<uint64_t> sizes_;
  std::vector<size_t> entry_;
  uint64_t total_ = 0;
};

}  // namespace braid::files
