// A set of manifest paths kept as entry indices: an open-addressing hash
// table (linear probing) of 4-byte slots, which asks the caller for an
// entry's path to compare (the entries hold the paths already). It stands
// for a std::unordered_set<std::string_view> of every path, which costs
// 60 bytes and more an entry (a node, a view, a bucket; issue 18, memory
// per manifest entry); this one costs 5 to 11 (a slot at a load of 3/8 to 3/4).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace braid::files {

class PathIndex {
 public:
  /// `path_of(entry)` returns entry's path (std::string_view) for any entry
  /// inserted so far; the index reads it at each probe and when it grows.
  /// The paths must not change while they are in the index.

  /// Adds `entry`, whose path is `path`; false (nothing added) if an entry
  /// with the same path is in already.
  template <class PathOf>
  bool insert(uint32_t entry, std::string_view path, PathOf&& path_of) {
    if ((count_ + 1) * 4 > slots_.size() * 3) grow(path_of);
    size_t at = home(path);
    for (; slots_[at] != kEmpty; at = next(at))
      if (path_of(slots_[at] - 1) == path) return false;
    slots_[at] = entry + 1;
    ++count_;
    return true;
  }

  /// The entry whose path is `path`, if one was inserted.
  template <class PathOf>
  std::optional<uint32_t> find(std::string_view path, PathOf&& path_of) const {
    if (count_ == 0) return std::nullopt;
    for (size_t at = home(path); slots_[at] != kEmpty; at = next(at))
      if (path_of(slots_[at] - 1) == path) return slots_[at] - 1;
    return std::nullopt;
  }

  size_t size() const { return count_; }
  /// Slots in the table (a power of two, 0 before the first insert).
  size_t capacity() const { return slots_.size(); }
  /// Room for `n` entries without growing.
  template <class PathOf>
  void reserve(size_t n, PathOf&& path_of) {
    while (n * 4 > slots_.size() * 3) grow(path_of);
  }

 private:
  static constexpr uint32_t kEmpty = 0;  // a slot holds its entry + 1
  size_t home(std::string_view path) const { return std::hash<std::string_view>{}(path) & (slots_.size() - 1); }
  size_t next(size_t at) const { return (at + 1) & (slots_.size() - 1); }

  template <class PathOf>
  void grow(PathOf& path_of) {
    std::vector<uint32_t> old(slots_.empty() ? 16 : slots_.size() * 2, kEmpty);
    old.swap(slots_);
    for (const uint32_t s : old) {
      if (s == kEmpty) continue;
      size_t at = home(path_of(s - 1));
      while (slots_[at] != kEmpty) at = next(at);
      slots_[at] = s;
    }
  }

  std::vector<uint32_t> slots_;
  size_t count_ = 0;
};

}  // namespace braid::files
