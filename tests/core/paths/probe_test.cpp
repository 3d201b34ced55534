// What `braid probe` reads from its samples (core/paths/probe.hpp).
#include "core/paths/probe.hpp"

#include <gtest/gtest.h>

namespace braid::paths {
namespace {

// A phase of `n` samples 0.1 s apart on two paths: path 0 ramps for its
// first second then carries `rate` bytes/s; path 1 carries nothing.
std::vector<ProbeTick> phase(int n, double rate, double rtt_ms) {
  std::vector<ProbeTick> out;
  uint64_t acked = 0;
  for (int i = 1; i <= n; ++i) {
    const double t = i * 0.1;
    acked += static_cast<uint64_t>((t <= 1.0 ? rate / 4 : rate) * 0.1);
    ProbeTick k;
    k.t = t;
    k.acked = {acked, 0};
    k.segs_out = {static_cast<uint64_t>(i) * 100, 0};
    k.retrans = {static_cast<uint64_t>(i), 0};
    k.srtt_ms = {t <= 1.0 ? 1.0 : rtt_ms + (i % 2), -1};
    out.push_back(k);
  }
  return out;
}

TEST(Probe, TheRateIsReadAfterTheRampAndTheDelayUnderLoadToo) {
  const auto ticks = phase(30, 10e6, 20);
  const PathFigures f = phase_figures(ticks, 0, 1.0);
  EXPECT_NEAR(f.rate_bps, 10e6, 1e3);  // the ramp's quarter rate left out
  EXPECT_NEAR(f.rtt_loaded_p50_ms, 20.5, 0.6);
  EXPECT_GE(f.rtt_loaded_p95_ms, 20.9);
  EXPECT_NEAR(f.loss, 0.01, 1e-9);
  EXPECT_EQ(f.bytes, ticks.back().acked[0]);
  // Read whole, the ramp would pull the rate down.
  EXPECT_LT(phase_figures(ticks, 0, 0.0).rate_bps, 9.5e6);
}

TEST(Probe, APhaseShorterThanTheRampIsReadWhole) {
  const auto ticks = phase(5, 8e6, 10);  // 0.5 s, all of it ramp
  const PathFigures f = phase_figures(ticks, 0, 1.0);
  EXPECT_NEAR(f.rate_bps, 2e6, 1e3);
  EXPECT_GT(f.rtt_loaded_p50_ms, 0);
}

TEST(Probe, APathThatCarriedNothingHasNoRateNoDelayNoLoss) {
  const PathFigures f = phase_figures(phase(30, 10e6, 20), 1, 1.0);
  EXPECT_EQ(f.rate_bps, 0);
  EXPECT_LT(f.rtt_loaded_p50_ms, 0);
  EXPECT_EQ(f.loss, 0);
  EXPECT_EQ(phase_figures({}, 0, 1.0).rate_bps, 0);
}

TEST(Probe, AddedDelayIsTheLoadedRoundTripOverTheIdleOne) {
  ProbedPath p;
  p.alone.rtt_loaded_p50_ms = 25;
  p.alone.rtt_loaded_p95_ms = 40;
  EXPECT_LT(p.added_delay_p50_ms(), 0);  // no idle RTT: unknown
  p.idle_rtt_ms = 5;
  EXPECT_DOUBLE_EQ(p.added_delay_p50_ms(), 20);
  EXPECT_DOUBLE_EQ(p.added_delay_p95_ms(), 35);
  p.idle_rtt_ms = 30;  // a quieter moment under load than at the handshake: no negative queue
  EXPECT_DOUBLE_EQ(p.added_delay_p50_ms(), 0);
}

TEST(Probe, PathsWithATinyShareOfThePredictionAreLeftIdle) {
  const auto idle = idle_paths({"usb", "wifi", "bt"}, {100 << 20, 150 << 20, 1 << 18});
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0], "bt");
  EXPECT_TRUE(idle_paths({"a"}, {1}).empty());
}

}  // namespace
}  // namespace braid::paths
