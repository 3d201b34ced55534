// An offer's entries kept as the parts they came in (issue 18: one copy of
// a big tree's manifest on the receiver).
//
// A receiver that answers an offer part by part (protocol 9) hands each part
// to its engine while later parts still come. With one growing vector, the
// engine had to copy each part (the vector moves as it grows, under writers
// that read entries on other threads), and the receiver held every entry
// twice at its peak. Parts that are shared and never change again can be
// read by the session machine, the receive tree and the writers at once, and
// nothing moves when another part joins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "core/wire/messages.hpp"

namespace braid::wire {

class EntryParts {
 public:
  using Part = std::shared_ptr<const std::vector<ManifestEntry>>;

  /// Appends a part (nothing for an empty one); its entries follow the ones before.
  void append(Part part) {
    if (!part || part->empty()) return;
    starts_.push_back(size_);
    size_ += part->size();
    for (const auto& e : *part)
      if (e.kind == EntryKind::file) total_ += e.size;
    parts_.push_back(std::move(part));
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Lets go of every part that ends at or before entry `entry` (the
  /// holders of an offer in path order keep what they still need of them:
  /// issue 18). Their entries can no longer be read (operator[] and the
  /// iterator throw std::out_of_range); the counts stay. Returns how many
  /// parts have gone in all.
  size_t release_before(size_t entry) {
    while (released_ < parts_.size() && starts_[released_] + parts_[released_]->size() <= entry)
      parts_[released_++].reset();
    return released_;
  }
  /// Parts [0, released()) have gone.
  size_t released() const { return released_; }
  /// Entry `i` of the whole offer: a binary search over the parts.
  const ManifestEntry& operator[](size_t i) const;
  const std::vector<Part>& parts() const { return parts_; }
  /// The index of part k's first entry.
  size_t first_of(size_t k) const { return starts_[k]; }
  /// The part that holds entry `i` (< size()).
  size_t part_of(size_t i) const;
  /// The sum of the file entries' sizes (Offer::total_bytes).
  uint64_t total_bytes() const { return total_; }

  /// In order, part after part (what put_entries and a range-for need).
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = ManifestEntry;
    using difference_type = std::ptrdiff_t;
    using pointer = const ManifestEntry*;
    using reference = const ManifestEntry&;
    Iterator() = default;
    Iterator(const EntryParts* of, size_t part, size_t at) : of_(of), part_(part), at_(at) {}
    reference operator*() const { return (*of_->held(part_))[at_]; }
    pointer operator->() const { return &**this; }
    Iterator& operator++() {
      if (++at_ == of_->held(part_)->size()) {
        ++part_;
        at_ = 0;
      }
      return *this;
    }
    Iterator operator++(int) {
      Iterator was = *this;
      ++*this;
      return was;
    }
    bool operator==(const Iterator& o) const { return part_ == o.part_ && at_ == o.at_; }

   private:
    const EntryParts* of_ = nullptr;
    size_t part_ = 0, at_ = 0;
  };
  Iterator begin() const { return Iterator(this, 0, 0); }
  Iterator end() const { return Iterator(this, parts_.size(), 0); }

 private:
  /// Part k, which must not have gone.
  const Part& held(size_t k) const;
  std::vector<Part> parts_;
  std::vector<size_t> starts_;
  size_t released_ = 0;
  size_t size_ = 0;
  uint64_t total_ = 0;
};

/// append_offer_part for a receiver that keeps the offer's entries as parts:
/// `head` holds the offer's fields (its `continued` is cleared by the last
/// part) and `entries` every entry so far; the same checks, and the part's
/// entries join `entries` as one new part.
std::string append_offer_part(Offer& head, EntryParts& entries, const OfferPart& part, bool& complete);
/// The same, moving the part's entries into the new part instead of copying them.
std::string append_offer_part(Offer& head, EntryParts& entries, OfferPart&& part, bool& complete);

/// encode_streamed for an offer of `fields`' fields with these entries.
void encode_streamed(const Offer& fields, const EntryParts& entries, const ByteSink& sink);

}  // namespace braid::wire
