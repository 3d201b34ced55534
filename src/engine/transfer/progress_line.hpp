// The progress display on a terminal: one line on stderr, redrawn in place —
// total bar, rate, ETA, and per lane its current rate and share. Nothing is
// drawn when stderr is not a terminal.
#pragma once

#include <cstdint>
#include <vector>

namespace braid::transfer {

class ProgressLine {
 public:
  struct LaneView {
    uint32_t id = 0;
    double rate = 0;  // bytes/s, the scheduler's current estimate (from acks)
    uint64_t bytes = 0;
    bool alive = true;
  };
  struct Snapshot {
    uint64_t total = 0;
    uint64_t done = 0;
    uint64_t resumed = 0;  // of `done`, held from an earlier run: not sent, so not in the rate
    double elapsed = 0;    // seconds
    std::vector<LaneView> lanes;
  };

  ProgressLine();
  void draw(const Snapshot& s, bool final);

 private:
  bool tty_;
};

}  // namespace braid::transfer
