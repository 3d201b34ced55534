// The counters report: every cause of drop and the queue high-water mark,
// per link and direction, under stable names that scripts rely on.
#include "emu/stats_report.hpp"

#include <gtest/gtest.h>

#include "model/spec_parser.hpp"
#include "virtual_time_driver.hpp"

namespace netlab {
namespace {

using namespace std::chrono_literals;

TEST(StatsReport, JsonHasCountersPerLinkAndDirection) {
  LabModel lab({*parse_link("U:rate=12Mbit,queue=2p").value, *parse_link("W").value}, 1);
  for (std::uint64_t i = 0; i < 5; ++i) lab.handle_packet(0, Dir::up, test::packet(i), at(0s));
  std::vector<IoCounters> io(4);
  const auto j = stats_json(lab, io, 3, at(2s));
  EXPECT_EQ(j["seq"], 3);
  EXPECT_DOUBLE_EQ(j["time_s"].get<double>(), 2.0);
  ASSERT_EQ(j["links"].size(), 2u);
  const auto& up = j["links"][0]["up"];
  EXPECT_EQ(j["links"][0]["name"], "U");
  EXPECT_EQ(j["links"][0]["index"], 1);
  EXPECT_EQ(j["links"][0]["device"], "nl-U");
  EXPECT_EQ(up["rx_packets"], 5);
  EXPECT_EQ(up["drops"]["queue"], 2);
  for (const char* cause : {"codel", "loss", "outage"}) EXPECT_EQ(up["drops"][cause], 0) << cause;
  EXPECT_EQ(up["queue_hwm_packets"], 2);
  EXPECT_EQ(up["settings"]["rate_bps"], 12'000'000);
  EXPECT_TRUE(j["links"][1]["down"].contains("tx_bytes"));
}

TEST(StatsReport, TextHasOneLinePerDirection) {
  LabModel lab({*parse_link("U").value}, 1);
  const std::string text = stats_text(lab, std::vector<IoCounters>(2), at(0s));
  EXPECT_NE(text.find("U            up"), std::string::npos);
  EXPECT_NE(text.find("U            down"), std::string::npos);
  EXPECT_NE(text.find("queue hwm"), std::string::npos);
}

}  // namespace
}  // namespace netlab
