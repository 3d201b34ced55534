#include <gtest/gtest.h>

#include "core/units.hpp"
#include "core/units_parse.hpp"

namespace braid {

TEST(Units, ParsesSizesDecimalAndBinary) {
  EXPECT_EQ(parse_size("256MiB")->count(), 256ull << 20);
  EXPECT_EQ(parse_size("1GB")->count(), 1000000000ull);
  EXPECT_EQ(parse_size("64KiB")->count(), 65536ull);
  EXPECT_EQ(parse_size("1.5KB")->count(), 1500ull);
  EXPECT_FALSE(parse_size("12 parsecs"));
  EXPECT_FALSE(parse_size("-1MiB"));
  EXPECT_FALSE(parse_size(""));
}

TEST(Units, ParsesRatesInBitsAndBytes) {
  EXPECT_DOUBLE_EQ(parse_rate("250Mbit/s")->bytes_per_second(), 31.25e6);
  EXPECT_DOUBLE_EQ(parse_rate("19.1MB/s")->bytes_per_second(), 19.1e6);
  EXPECT_DOUBLE_EQ(parse_rate("1.5Mbit/s")->bytes_per_second(), 187500);
  EXPECT_DOUBLE_EQ(parse_rate("8kbit/s")->bytes_per_second(), 1000);
  EXPECT_DOUBLE_EQ(parse_rate("1Gbit/s")->bits_per_second(), 1e9);
  EXPECT_DOUBLE_EQ(parse_rate("100B/s")->bytes_per_second(), 100);
  EXPECT_DOUBLE_EQ(parse_rate("1KiB/s")->bytes_per_second(), 1024);
  EXPECT_FALSE(parse_rate("fast"));
  EXPECT_FALSE(parse_rate("10MB"));  // a size is not a rate
}

TEST(Units, ParsesDurations) {
  EXPECT_EQ(parse_duration("2s")->ns(), 2000000000);
  EXPECT_EQ(parse_duration("40ms")->ns(), 40000000);
  EXPECT_EQ(parse_duration("250us")->ns(), 250000);
  EXPECT_FALSE(parse_duration("3 fortnights"));
}

// Found by fuzz/targets/units_parse.cpp (and sim_scenario.cpp): "215e46s"
// reached Duration::seconds_f, whose double-to-int64 cast is undefined
// that far out; llround gave garbage sizes; a rate could be infinite.
TEST(Units, ValuesBeyondTheirTypesAreRefused) {
  EXPECT_FALSE(parse_duration("215e46s"));
  EXPECT_FALSE(parse_duration("9.3e9s"));
  EXPECT_EQ(parse_duration("9.2e9s")->ns(), 9200000000000000000);
  EXPECT_FALSE(parse_duration("1e16ms"));
  EXPECT_FALSE(parse_duration("1e19ns"));
  EXPECT_FALSE(parse_size("1e30B"));
  EXPECT_FALSE(parse_size("10000000000GB"));  // 1e19 B: past 2^63
  EXPECT_EQ(parse_size("9000000GB")->count(), 9000000000000000ull);
  EXPECT_FALSE(parse_rate("1e308Gbit/s"));
  EXPECT_FALSE(parse_rate("1e308GB/s"));
}

TEST(Units, RateTransferTimeIsNeverInfiniteByDivisionByZero) {
  EXPECT_EQ(Rate::over(Bytes(1000), Duration::zero()).bytes_per_second(), 0);
  EXPECT_EQ(Rate::zero().transfer_time(Bytes(1)), Duration::infinite());
  EXPECT_EQ(Rate::bytes_per_sec(1000).transfer_time(Bytes(500)), Duration::millis(500));
}

TEST(Units, BytesSubtractionSaturatesAtZero) { EXPECT_EQ((Bytes(5) - Bytes(9)).count(), 0u); }

}  // namespace braid
