// State kept by entry index that lets go of its front (issue 18): the
// slots of entries [base, size) in a window, and below it only the few
// slots set aside when they left it. A receiver that forgets the files it
// wrote (ReceiveTree::release_written) then holds memory for the entries
// still to come and the few that finalize still needs, not for every entry
// of the tree.
//
// Slots never move while they are held (the window is a deque: an element
// stays where it is while others come at the back or leave at the front;
// the slots set aside are a map's nodes), so a slot may hold atomics and
// be read by other threads while the control thread adds slots; adding
// and letting go are the caller's to exclude from reads (ReceiveTree's
// sealing_ lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>

namespace braid::files {

template <class Slot>
class SlotWindow {
 public:
  /// Entries so far, held or not.
  size_t size() const { return base_ + window_.size(); }
  /// The first entry still in the window; the entries before it are set aside or gone.
  size_t base() const { return base_; }
  /// Slots held: the window's and those set aside.
  size_t held() const { return window_.size() + aside_.size(); }
  size_t set_aside() const { return aside_.size(); }

  /// The slot of the next entry (index size()).
  template <class... Args>
  Slot& emplace_back(Args&&... args) {
    return window_.emplace_back(std::forward<Args>(args)...);
  }

  /// Entry i's slot, or nullptr if it was let go without being set aside.
  Slot* find(size_t i) { return const_cast<Slot*>(std::as_const(*this).find(i)); }
  const Slot* find(size_t i) const {
    if (i >= base_) return i < size() ? &window_[i - base_] : nullptr;
    const auto it = aside_.find(i);
    return it == aside_.end() ? nullptr : &it->second;
  }

  /// The window's slots of entries [base, end) leave it, in order: each one
  /// for which `keep(i, slot)` is true is moved aside (Slot(Slot&&)), the
  /// others are gone.
  template <class Keep>
  void let_go_before(size_t end, Keep keep) {
    for (; base_ < end && !window_.empty(); ++base_) {
      Slot& s = window_.front();
      if (keep(base_, s)) aside_.emplace_hint(aside_.end(), base_, std::move(s));
      window_.pop_front();
    }
  }

  /// A slot set aside goes too (its entry is done with); false if entry i
  /// has none.
  bool forget_aside(size_t i) { return i < base_ && aside_.erase(i) == 1; }

  /// fn(i, slot) for every slot held, by entry, first to last.
  template <class Fn>
  void for_each(Fn fn) {
    for (auto& [i, s] : aside_) fn(i, s);
    for (size_t k = 0; k < window_.size(); ++k) fn(base_ + k, window_[k]);
  }

 private:
  std::deque<Slot> window_;       // entries [base_, size())
  std::map<size_t, Slot> aside_;  // set aside, by entry
  size_t base_ = 0;
};

}  // namespace braid::files
