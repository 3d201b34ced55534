// The lanes of one path run one startup between them. Each lane's own
// startup (BBR's: pace at 2.77×, grow the window by what is acked, stop
// when the rate grew < 25 % for three rounds) ends only when *its* rate
// stops growing; with several lanes on one bottleneck a lane's rate keeps
// growing long after the link is full — it takes share from the others —
// so four startups on a 4 Mbit/s uplink kept exponential growth going for
// seconds and filled hundreds of milliseconds of a deep buffer (netlab,
// docs/benchmarks.md "Slow uplinks"). Shared, the first lane that finds the
// pipe full ends startup for all of them, and a lane that opens later
// starts from its first round's rate and takes its share by the gain
// cycle's probes: the group's start costs one controller's queue.
//
// Pure: the lanes' controllers call it from their own threads (the engine's
// UDP lanes each have one), hence an atomic.
#pragma once

#include <atomic>

namespace braid::transport {

class SharedStartup {
 public:
  /// A lane of the path found the pipe full.
  void mark_pipe_full() { pipe_full_.store(true, std::memory_order_relaxed); }
  /// Whether any lane of the path has found the pipe full.
  bool pipe_full() const { return pipe_full_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> pipe_full_{false};
};

}  // namespace braid::transport
