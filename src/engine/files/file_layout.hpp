// The transfer's byte space: the manifest's regular files laid end to end in
// manifest order. Maps a transfer range to the file regions it covers (a
// piece may span several small files).
//
// 12 bytes a file (issue 18, memory per manifest entry): each file's start
// in the byte space and its entry index; its size is the gap to the next
// file's start (to the total for the last), since files of size 0 take no
// place in it.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>
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
  /// Entry indices are kept in 32 bits: no offer may have more entries
  /// (the receiver refuses more than kMaxOfferEntries, the sender's walk
  /// stops there).
  static_assert(wire::kMaxOfferEntries <= std::numeric_limits<uint32_t>::max());

  FileLayout() = default;
  explicit FileLayout(const std::vector<wire::ManifestEntry>& entries) {
    for (size_t i = 0; i < entries.size(); ++i) append(entries[i], i);
  }

  /// Entry `index` of the manifest, after every entry before it: a tree
  /// that grows part by part (protocol 9) lays its files out as they come.
  /// `index` < kMaxOfferEntries.
  void append(const wire::ManifestEntry& e, size_t index) {
    if (e.kind != wire::EntryKind::file || e.size == 0) return;
    assert(index < wire::kMaxOfferEntries);
    starts_.push_back(total_);
    entry_.push_back(static_cast<uint32_t>(index));
    total_ += e.size;
  }

  uint64_t total() const { return total_; }
  /// Files laid out and still held (entries of size 0 and other kinds take no place).
  size_t files() const { return starts_.size(); }
  /// Where the first file held of entry `entry` or a later one begins
  /// (total() if none): the files before it are read no more once the
  /// entries before `entry` are let go.
  uint64_t start_of(size_t entry) const {
    const size_t i = held_before(entry);
    return i == entry_.size() ? total_ : starts_[i];
  }
  /// Where the first file still held begins (total() if none): the bytes
  /// before it belong to files let go (release_before).
  uint64_t held_from() const { return starts_.empty() ? total_ : starts_.front(); }
  /// Lets go of the files of entries before `entry` (a streamed walk's
  /// window, issue 18), as SourceTree::release_before does: once they are
  /// as many as the files still held (or 65,536).
  void release_before(size_t entry) {
    const size_t gone = held_before(entry);
    if (gone == 0 || (gone < starts_.size() - gone && gone < 65536)) return;
    starts_.erase(starts_.begin(), starts_.begin() + static_cast<ptrdiff_t>(gone));
    entry_.erase(entry_.begin(), entry_.begin() + static_cast<ptrdiff_t>(gone));
    gone_ += gone;
  }

  /// Calls fn(const Extent&) for each file region of [offset, offset+length),
  /// in order; stops and returns false as soon as fn returns false.
  /// It reads the tables afresh at each region, so the layout may grow at
  /// its end (append) or let go of its front (release_before) between two
  /// calls of fn; a file let go meanwhile ends the walk (false).
  template <class Fn>
  bool for_each(uint64_t offset, uint64_t length, Fn&& fn) const {
    if (length == 0) return true;
    auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    if (it == starts_.begin()) return false;
    size_t at = gone_ + static_cast<size_t>(it - starts_.begin()) - 1;  // counted from the first file ever laid out
    while (length > 0 && at >= gone_ && at - gone_ < starts_.size()) {
      const size_t i = at - gone_;
      const uint64_t in_file = offset - starts_[i];
      const uint64_t n = std::min(length, size_of(i) - in_file);
      if (!fn(Extent{entry_[i], in_file, offset, n})) return false;
      offset += n;
      length -= n;
      ++at;
    }
    return length == 0;
  }

 private:
  /// Files held whose entry comes before `entry`.
  size_t held_before(size_t entry) const {
    return static_cast<size_t>(
        std::lower_bound(entry_.begin(), entry_.end(), entry, [](uint32_t e, size_t at) { return e < at; }) -
        entry_.begin());
  }
  /// The size of the i-th file laid out.
  uint64_t size_of(size_t i) const { return (i + 1 < starts_.size() ? starts_[i + 1] : total_) - starts_[i]; }

  std::vector<uint64_t> starts_;  // by file laid out: where it begins in the byte space
  std::vector<uint32_t> entry_;   // by file laid out: its index in the manifest
  size_t gone_ = 0;               // files let go from the front (release_before)
  uint64_t total_ = 0;
};

}  // namespace braid::files
