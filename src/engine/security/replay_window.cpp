#include "replay_window.h"

namespace braid::security {

FrameStatus ReplayWindow::check(std::uint64_t counter) const {
  if (!any_ || counter > highest_) return FrameStatus::ok;
  if (highest_ - counter >= kSize) return FrameStatus::too_old;
  return test(counter) ? FrameStatus::replayed : FrameStatus::ok;
}

void ReplayWindow::accept(std::uint64_t counter) {
  if (!any_) {
    bits_.fill(0);
    highest_ = counter;
    any_ = true;
  } else if (counter > highest_) {
    // The slots of counters the window slides over now stand for new counters.
    std::uint64_t advance = counter - highest_;
    if (advance >= kSize) {
      bits_.fill(0);
    } else {
      // Counted, not `c <= counter`: at counter 2^64 - 1 that never ends.
      for (std::uint64_t i = 1; i <= advance; ++i) clear(highest_ + i);
    }
    highest_ = counter;
  }
  set(counter);
}

}  // namespace braid::security
