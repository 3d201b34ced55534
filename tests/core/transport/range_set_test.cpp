#include <gtest/gtest.h>

#include "core/transport/range_set.hpp"
#include "core/transport/rtt_estimator.hpp"

namespace braid::transport {
namespace {

TEST(RangeSet, MergesAdjacentAndOverlappingRanges) {
  RangeSet s;
  EXPECT_EQ(s.insert(0, 4), 5u);
  EXPECT_EQ(s.insert(10, 14), 5u);
  EXPECT_EQ(s.range_count(), 2u);
  EXPECT_EQ(s.insert(3, 11), 5u);  // only 5..9 are new
  ASSERT_EQ(s.range_count(), 1u);
  EXPECT_EQ(s.ranges()[0], (Range{0, 14}));
  EXPECT_EQ(s.insert(15), 1u);
  EXPECT_EQ(s.ranges()[0], (Range{0, 15}));
  EXPECT_EQ(s.insert(7), 0u);
  EXPECT_TRUE(s.contains(15));
  EXPECT_FALSE(s.contains(16));
}

TEST(RangeSet, BoundedSetForgetsTheOldestRanges) {
  RangeSet s(3);
  for (uint64_t i = 0; i < 5; ++i) s.insert(i * 10);
  EXPECT_EQ(s.range_count(), 3u);
  EXPECT_EQ(s.smallest(), 20u);
  EXPECT_TRUE(s.below_window(0));
  EXPECT_TRUE(s.below_window(15));
  EXPECT_FALSE(s.below_window(25));
}

// Found by fuzz/targets/range_set.cpp: at 2^64 - 1, hi + 1 wrapped to 0, so
// a range ending there was inserted unmerged and out of order (packet
// numbers come from the peer and may be that large).
TEST(RangeSet, RangesEndingAt2To64Minus1StaySortedAndMerged) {
  RangeSet s;
  s.insert(5, 10);
  EXPECT_EQ(s.insert(0, UINT64_MAX), UINT64_MAX - 5);  // all but 5..10 are new
  ASSERT_EQ(s.range_count(), 1u);
  EXPECT_EQ(s.ranges()[0], (Range{0, UINT64_MAX}));

  RangeSet t;
  t.insert(UINT64_MAX - 1, UINT64_MAX);
  EXPECT_EQ(t.insert(UINT64_MAX - 5, UINT64_MAX - 3), 3u);
  ASSERT_EQ(t.range_count(), 2u);
  EXPECT_EQ(t.ranges()[0], (Range{UINT64_MAX - 5, UINT64_MAX - 3}));
  EXPECT_EQ(t.ranges()[1], (Range{UINT64_MAX - 1, UINT64_MAX}));
  EXPECT_EQ(t.insert(UINT64_MAX - 2), 1u);  // fills the gap: one range
  ASSERT_EQ(t.range_count(), 1u);
  EXPECT_EQ(t.ranges()[0], (Range{UINT64_MAX - 5, UINT64_MAX}));
  EXPECT_TRUE(t.contains(UINT64_MAX));
  EXPECT_FALSE(t.contains(UINT64_MAX - 6));
}

TEST(RttEstimator, FollowsRfc9002) {
  RttEstimator rtt;
  EXPECT_EQ(rtt.smoothed(), Duration::millis(333));
  rtt.on_sample(Duration::millis(100), Duration::millis(10));
  EXPECT_EQ(rtt.smoothed(), Duration::millis(100));  // first sample: ack delay ignored
  EXPECT_EQ(rtt.rttvar(), Duration::millis(50));
  EXPECT_EQ(rtt.min(), Duration::millis(100));
  rtt.on_sample(Duration::millis(120), Duration::millis(10));
  // adjusted = 110 ms; srtt = 7/8·100 + 1/8·110; rttvar = 3/4·50 + 1/4·10.
  EXPECT_EQ(rtt.smoothed(), Duration::micros(101250));
  EXPECT_EQ(rtt.rttvar(), Duration::micros(40000));
  // An ack delay that would go below min_rtt is not subtracted.
  rtt.on_sample(Duration::millis(105), Duration::millis(10));
  EXPECT_EQ(rtt.latest_adjusted(), Duration::millis(105));
  EXPECT_EQ(rtt.pto_base(Duration::millis(5)),
            rtt.smoothed() + rtt.rttvar() * 4.0 + Duration::millis(5));
}

}  // namespace
}  // namespace braid::transport
