// Issue 4's "with the slow lane present braid is never slower than without
// it", in simulated time: the netlab's seed (with and without its 1.5 Mbit/s
// lane B) and slow-low-rtt (a 2 Mbit/s, 1 ms lane beside a 100 Mbit/s, 10 ms
// one), at several sizes, with TCP-like start-up, delay jitter and a slow
// lane whose rate wanders from piece to piece.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/simulator.hpp"

namespace braid::sim {
namespace {

struct Case {
  std::string name;
  std::vector<std::string> fast;  // the lanes of the run without the slow one
  std::string slow;               // the lane added
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Sim RTTs are twice the lab's one-way delays. iw=14480B is TCP's initial
// window (10 packets): every lane then ramps up as the lab's TCP lanes do.
// Noise goes on the slow lane only: noise on the fast lanes would give the
// runs with and without it different draws, not the same lanes.
const std::vector<Case> kCases = {
    {"seed", {"U:rate=160Mbit/s,rtt=2ms", "W:rate=320Mbit/s,rtt=6ms"}, "B:rate=1.5Mbit/s,rtt=40ms"},
    {"seed_slow_start",
     {"U:rate=160Mbit/s,rtt=2ms,iw=14480B", "W:rate=320Mbit/s,rtt=6ms,iw=14480B"},
     "B:rate=1.5Mbit/s,rtt=40ms,iw=14480B"},
    {"seed_noisy_b", {"U:rate=160Mbit/s,rtt=2ms", "W:rate=320Mbit/s,rtt=6ms"},
     "B:rate=1.5Mbit/s,rtt=40ms,jitter=20ms,noise=0.3"},
    {"seed_slow_start_noisy_b",
     {"U:rate=160Mbit/s,rtt=2ms,iw=14480B", "W:rate=320Mbit/s,rtt=6ms,iw=14480B"},
     "B:rate=1.5Mbit/s,rtt=40ms,jitter=20ms,noise=0.3,iw=14480B"},
    // As the engine's TCP lanes look to the scheduler: slow start, and a
    // receiver that times pieces by sealed 256 KiB frames.
    {"seed_like_the_engine",
     {"U:rate=160Mbit/s,rtt=2ms,iw=14480B,frame=256KiB", "W:rate=320Mbit/s,rtt=6ms,iw=14480B,frame=256KiB"},
     "B:rate=1.5Mbit/s,rtt=40ms,iw=14480B,frame=256KiB,jitter=20ms,noise=0.3"},
    {"slow_low_rtt", {"F:rate=100Mbit/s,rtt=20ms"}, "L:rate=2Mbit/s,rtt=2ms"},
    {"slow_low_rtt_like_the_engine", {"F:rate=100Mbit/s,rtt=20ms,iw=14480B,frame=256KiB"},
     "L:rate=2Mbit/s,rtt=2ms,iw=14480B,frame=256KiB,jitter=2ms,noise=0.3"},
    {"slow_low_rtt_slow_start", {"F:rate=100Mbit/s,rtt=20ms,iw=14480B"}, "L:rate=2Mbit/s,rtt=2ms,iw=14480B"},
    {"slow_low_rtt_noisy_l", {"F:rate=100Mbit/s,rtt=20ms"}, "L:rate=2Mbit/s,rtt=2ms,jitter=2ms,noise=0.3"},
    {"slow_low_rtt_slow_start_noisy_l", {"F:rate=100Mbit/s,rtt=20ms,iw=14480B"},
     "L:rate=2Mbit/s,rtt=2ms,jitter=2ms,noise=0.3,iw=14480B"},
};

Scenario make(const std::vector<std::string>& specs, Bytes size, uint64_t seed) {
  Scenario sc;
  sc.size = size;
  sc.seed = seed;
  for (const auto& spec : specs) {
    LaneSpec l;
    EXPECT_EQ(parse_lane(spec, l), "") << spec;
    sc.lanes.push_back(l);
  }
  return sc;
}

class SlowLane : public ::testing::TestWithParam<Case> {};

TEST_P(SlowLane, AddingItNeverMakesBraidSlower) {
  const Case& c = GetParam();
  for (const Bytes size : {Bytes::mib(16), Bytes::mib(64), Bytes::mib(256)}) {
    // Lanes keep their random streams when one is added (the slow lane is
    // last), so the fast lanes see the same noise in both runs.
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      std::vector<std::string> all = c.fast;
      all.push_back(c.slow);
      const RunResult without = run(make(c.fast, size, seed), "braid");
      const RunResult with = run(make(all, size, seed), "braid");
      ASSERT_TRUE(without.completed && with.completed);
      EXPECT_LE(with.time, without.time)
          << c.name << ", " << size.count() / (1 << 20) << " MiB, seed " << seed << ": with "
          << with.time.to_seconds() << " s, without " << without.time.to_seconds() << " s";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Netlab, SlowLane, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace braid::sim
