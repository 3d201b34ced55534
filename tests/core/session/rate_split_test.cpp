// Sharing --rate-limit and --metered caps over lanes (core/session/rate_split.hpp).
#include "core/session/rate_split.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace braid::session {
namespace {

double sum(const std::vector<std::optional<double>>& v) {
  double s = 0;
  for (const auto& x : v) s += x.value_or(0);
  return s;
}

TEST(RateSplit, UnmeasuredLanesShareEvenly) {
  const auto caps = split_rates(90, {}, {{}, {}, {}});
  for (const auto& c : caps) EXPECT_DOUBLE_EQ(*c, 30);
}

// 60 over a lane that delivers 100 and one that delivers 10: the slow one
// keeps what it can use (with headroom) and the fast one gets the rest,
// where an even split would move 30 + 10.
TEST(RateSplit, ALaneThatCannotUseItsShareLeavesItToTheOthers) {
  const auto caps = split_rates(60, {}, {{100.0}, {10.0}});
  EXPECT_DOUBLE_EQ(*caps[1], 10 * kClaimHeadroom);
  EXPECT_DOUBLE_EQ(*caps[0], 60 - 10 * kClaimHeadroom);
  EXPECT_DOUBLE_EQ(sum(caps), 60);
}

// A lane far below its cap is held by its path: it claims only a little
// more than it delivers; one at its cap claims a quarter more to find out
// whether its path can do more.
TEST(RateSplit, ALaneHeldByItsPathClaimsLessThanOneHeldByItsCap) {
  const auto caps = split_rates(60, {}, {{30.0, false, -1, 30.0}, {5.0, false, -1, 30.0}});
  EXPECT_DOUBLE_EQ(*caps[1], 5 * kPathLimitedHeadroom);  // and none of what nobody claims
  EXPECT_DOUBLE_EQ(*caps[0], 60 - 5 * kPathLimitedHeadroom);
}

TEST(RateSplit, WhenEveryClaimIsMetTheRestIsSharedOnTop) {
  const auto caps = split_rates(100, {}, {{10.0}, {20.0}});
  EXPECT_DOUBLE_EQ(*caps[0], 12.5 + (100 - 37.5) / 2);
  EXPECT_DOUBLE_EQ(*caps[1], 25 + (100 - 37.5) / 2);
  EXPECT_DOUBLE_EQ(sum(caps), 100);
}

TEST(RateSplit, StalledLanesShareAnEighth) {
  const auto caps = split_rates(80, {}, {{std::nullopt, false}, {std::nullopt, true}, {std::nullopt, true}});
  EXPECT_DOUBLE_EQ(*caps[0], 70);
  EXPECT_DOUBLE_EQ(*caps[1], 5);
  EXPECT_DOUBLE_EQ(*caps[2], 5);
  // Only stalled lanes: they share all of it.
  const auto all = split_rates(80, {}, {{std::nullopt, true}, {std::nullopt, true}});
  EXPECT_DOUBLE_EQ(*all[0], 40);
}

TEST(RateSplit, AMeteredInterfaceIsCappedWithOrWithoutALimit) {
  // No --rate-limit: only the metered lanes get caps, sharing theirs.
  const std::vector<RateClaim> lanes = {{std::nullopt, false, -1}, {std::nullopt, false, 0}, {std::nullopt, false, 0}};
  const auto free = split_rates(std::nullopt, {5}, lanes);
  EXPECT_FALSE(free[0].has_value());
  EXPECT_DOUBLE_EQ(*free[1], 2.5);
  EXPECT_DOUBLE_EQ(*free[2], 2.5);
  // Within a limit: the metered lanes never exceed their cap, the rest takes what is left.
  const auto within = split_rates(30, {5}, lanes);
  EXPECT_DOUBLE_EQ(*within[1] + *within[2], 5);
  EXPECT_DOUBLE_EQ(*within[0], 25);
  EXPECT_DOUBLE_EQ(sum(within), 30);
}

TEST(RateSplit, WaterFillNeverGivesMoreThanTheCap) {
  for (double cap : {1.0, 50.0, 1000.0}) {
    const auto out = water_fill(cap, {3, -1, 40, 7, -1});
    EXPECT_NEAR(std::accumulate(out.begin(), out.end(), 0.0), cap, 1e-9);
    for (double x : out) EXPECT_GE(x, 0);
  }
  EXPECT_TRUE(water_fill(10, {}).empty());
}


TEST(RateSplit, CapsInForceNeverAddUpToMoreThanTheLimitWhileSharesDrift) {
  // Three lanes whose measured rates wander by a few percent per split, as
  // on loopback under --rate-limit: the caps in force (only those worth a
  // syscall are changed) must stay within the limit at every split. Keeping
  // every small move out, as before, put the sum 1 % over.
  const double limit = 25e6;
  std::vector<std::optional<double>> in_force(3);
  std::vector<double> measured = {10e6, 8e6, 7e6};
  uint64_t state = 7;
  auto wander = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return 0.97 + 0.06 * static_cast<double>(state >> 11) / static_cast<double>(1ULL << 53);
  };
  size_t changes = 0;
  for (int split = 0; split < 2000; ++split) {
    std::vector<RateClaim> lanes;
    for (size_t i = 0; i < 3; ++i) lanes.push_back({measured[i], false, -1, in_force[i]});
    const auto wanted = split_rates(limit, {}, lanes);
    for (size_t i = 0; i < 3; ++i)
      if (cap_worth_setting(in_force[i], wanted[i])) {
        in_force[i] = wanted[i];
        ++changes;
      }
    double sum = 0;
    for (const auto& c : in_force) sum += c.value_or(0);
    ASSERT_LE(sum, limit * (1 + 1e-9)) << "split " << split;
    // Each lane delivers up to its cap, wandering below it.
    for (size_t i = 0; i < 3; ++i) measured[i] = std::min(*in_force[i], measured[i] * wander());
  }
  EXPECT_LT(changes, 3u * 2000) << "small rises are kept out";
}

TEST(RateSplit, ACapIsSetWhenItAppearsGoesFallsOrRisesClearly) {
  EXPECT_TRUE(cap_worth_setting(std::nullopt, 10.0));
  EXPECT_TRUE(cap_worth_setting(10.0, std::nullopt));
  EXPECT_FALSE(cap_worth_setting(std::nullopt, std::nullopt));
  EXPECT_TRUE(cap_worth_setting(10.0, 9.99));
  EXPECT_FALSE(cap_worth_setting(10.0, 10.1));
  EXPECT_TRUE(cap_worth_setting(10.0, 10.3));
}

}  // namespace
}  // namespace braid::session
