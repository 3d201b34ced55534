#include "engine/security/replay_window.h"

#include <gtest/gtest.h>

namespace braid::security {
namespace {

bool take(ReplayWindow& w, std::uint64_t c) {
  if (w.check(c) != FrameStatus::ok) return false;
  w.accept(c);
  return true;
}

TEST(ReplayWindow, AcceptsInOrderAndRejectsDuplicates) {
  ReplayWindow w;
  for (std::uint64_t c = 0; c < 3000; ++c) ASSERT_TRUE(take(w, c));
  EXPECT_EQ(w.check(2999), FrameStatus::replayed);
  EXPECT_EQ(w.check(2000), FrameStatus::replayed);
  EXPECT_EQ(w.check(1976), FrameStatus::replayed);  // oldest still in the window
  EXPECT_EQ(w.check(1975), FrameStatus::too_old);
  EXPECT_EQ(w.check(0), FrameStatus::too_old);
}

TEST(ReplayWindow, AcceptsOutOfOrderWithinTheWindow) {
  ReplayWindow w;
  ASSERT_TRUE(take(w, 1000));
  ASSERT_TRUE(take(w, 5));    // 995 behind: inside
  ASSERT_TRUE(take(w, 999));
  ASSERT_TRUE(take(w, 1));
  EXPECT_FALSE(take(w, 5));
  EXPECT_EQ(w.check(5), FrameStatus::replayed);
  ASSERT_TRUE(take(w, 1040));
  EXPECT_EQ(w.check(5), FrameStatus::too_old);  // 1035 behind now
  EXPECT_EQ(w.check(1000), FrameStatus::replayed);
  EXPECT_EQ(w.check(1005), FrameStatus::ok);    // a gap is still fresh
}

TEST(ReplayWindow, BigJumpForgetsEverythingOld) {
  ReplayWindow w;
  for (std::uint64_t c = 0; c < 100; ++c) ASSERT_TRUE(take(w, c));
  ASSERT_TRUE(take(w, 1'000'000));
  EXPECT_EQ(w.check(99), FrameStatus::too_old);
  EXPECT_EQ(w.check(1'000'000 - 1023), FrameStatus::ok);
  EXPECT_EQ(w.check(1'000'000 - 1024), FrameStatus::too_old);
  ASSERT_TRUE(take(w, 1'000'000 - 1023));
  EXPECT_EQ(w.check(1'000'000 - 1023), FrameStatus::replayed);
}

TEST(ReplayWindow, SlotsAreReusedCorrectlyAfterSliding) {
  ReplayWindow w;
  ASSERT_TRUE(take(w, 10));
  ASSERT_TRUE(take(w, 10 + 1024));        // same slot as 10, window slid past it
  EXPECT_EQ(w.check(10), FrameStatus::too_old);
  EXPECT_EQ(w.check(11), FrameStatus::ok);  // 1023 behind, never seen
  EXPECT_EQ(w.check(10 + 1024), FrameStatus::replayed);
}

TEST(ReplayWindow, HugeCountersNearTheTop) {
  ReplayWindow w;
  const std::uint64_t top = UINT64_MAX - 1;
  ASSERT_TRUE(take(w, top));
  ASSERT_TRUE(take(w, top - 1));
  EXPECT_EQ(w.check(top), FrameStatus::replayed);
  EXPECT_EQ(w.check(top - 2000), FrameStatus::too_old);
}

// Found by fuzz/targets/datagram_open.cpp: sliding up to 2^64 - 1 looped
// forever (the slot loop's counter wrapped), so one authenticated datagram
// with that packet number hung the lane's I/O thread.
TEST(ReplayWindow, SlidesToTheLastCounterAndStops) {
  ReplayWindow w;
  ASSERT_TRUE(take(w, UINT64_MAX - 5));
  ASSERT_TRUE(take(w, UINT64_MAX));
  EXPECT_EQ(w.highest(), UINT64_MAX);
  EXPECT_EQ(w.check(UINT64_MAX), FrameStatus::replayed);
  EXPECT_EQ(w.check(UINT64_MAX - 5), FrameStatus::replayed);
  EXPECT_EQ(w.check(UINT64_MAX - 4), FrameStatus::ok);
  EXPECT_EQ(w.check(UINT64_MAX - 1024), FrameStatus::too_old);
}

}  // namespace
}  // namespace braid::security
