// CoDel's control law: the first drop one interval after the delay stays
// above target, then drops closer together as interval / sqrt(count).
#include "model/codel.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace netlab {
namespace {

using namespace std::chrono_literals;

TEST(Codel, DropsFollowTheControlLaw) {
  CodelState codel;
  const CodelParams params;  // 5 ms target, 100 ms interval
  std::vector<Duration> drops;
  for (Duration t = 0ms; t <= 340ms; t += 1ms)
    if (codel.should_drop(at(t), 10ms, 100000, 1500, params)) drops.push_back(t);
  // 100 ms after the delay first exceeds target; then +100/sqrt(2), +100/sqrt(3) ms...
  ASSERT_EQ(drops.size(), 4u);
  EXPECT_EQ(drops[0], 100ms);
  EXPECT_EQ(drops[1], 200ms);
  EXPECT_EQ(drops[2], 271ms);  // 200 + 70.7
  EXPECT_EQ(drops[3], 329ms);  // 270.7 + 57.7
}

TEST(Codel, NoDropsBelowTargetOrWithLittleQueued) {
  CodelState codel;
  const CodelParams params;
  for (Duration t = 0ms; t <= 1s; t += 1ms) {
    EXPECT_FALSE(codel.should_drop(at(t), 4ms, 100000, 1500, params));
    EXPECT_FALSE(codel.should_drop(at(t), 50ms, 1500, 1500, params));  // at most one packet left
  }
}

TEST(Codel, LeavesDropStateWhenDelayFalls) {
  CodelState codel;
  const CodelParams params;
  codel.should_drop(at(0ms), 10ms, 100000, 1500, params);
  EXPECT_TRUE(codel.should_drop(at(100ms), 10ms, 100000, 1500, params));
  EXPECT_TRUE(codel.dropping());
  EXPECT_FALSE(codel.should_drop(at(101ms), 1ms, 100000, 1500, params));
  EXPECT_FALSE(codel.dropping());
}

TEST(Codel, ResumesNearTheOldRateAfterAShortPause) {
  // RFC 8289 5.5: re-entering soon after leaving keeps (count - lastcount).
  CodelState codel;
  const CodelParams params;
  Duration t = 0ms;
  for (; t <= 500ms; t += 1ms) codel.should_drop(at(t), 10ms, 100000, 1500, params);
  codel.should_drop(at(t), 1ms, 100000, 1500, params);  // leave
  std::vector<Duration> drops;
  for (t += 1ms; t <= 900ms; t += 1ms)
    if (codel.should_drop(at(t), 10ms, 100000, 1500, params)) drops.push_back(t);
  ASSERT_GE(drops.size(), 3u);
  // A fresh start would space the second and third drop 100 and 70 ms apart.
  EXPECT_LT(drops[2] - drops[1], 50ms);
}

}  // namespace
}  // namespace netlab
