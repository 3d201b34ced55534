// The table `braid send` / `braid recv` print at the end (cli/engine_report.hpp).
#include "cli/engine_report.hpp"

#include <gtest/gtest.h>

namespace braid::cli {
namespace {

transfer::LaneReport lane(uint32_t id, const std::string& iface, uint64_t bytes, uint64_t wire) {
  transfer::LaneReport l;
  l.lane_id = id;
  l.leaves_by = iface;
  l.bytes = bytes;
  l.wire_bytes = wire;
  return l;
}

// A metered link's part reads at a glance: one line per path, its lanes summed.
TEST(LaneTable, ALineForEachPathItsLanesLeftBy) {
  transfer::TransferReport r;
  r.seconds = 4;
  r.bytes = 48u << 20;
  r.lanes = {lane(0, "", 1u << 20, (1u << 20) + 4096), lane(1, "s2", 2u << 20, (2u << 20) + 8192),
             lane(2, "s1", 40u << 20, (40u << 20) + 65536), lane(3, "s2", 3u << 20, (3u << 20) + 8192)};
  const std::string t = lane_table(r);
  EXPECT_NE(t.find("path (unknown): 1.0 MiB over 1 lane"), std::string::npos) << t;
  EXPECT_NE(t.find("path s2: 5.0 MiB over 2 lanes = 10.5 Mbit/s"), std::string::npos) << t;
  EXPECT_NE(t.find("path s1: 40.0 MiB over 1 lane = 83.9 Mbit/s"), std::string::npos) << t;
  // In the order the lanes came, before the totals.
  EXPECT_LT(t.find("path s2:"), t.find("path s1:"));
  EXPECT_LT(t.find("path s1:"), t.find("total "));
}

TEST(LaneTable, OnePathNeedsNoLineOfItsOwn) {
  transfer::TransferReport r;
  r.seconds = 1;
  r.lanes = {lane(0, "eth0", 1u << 20, 1u << 20), lane(1, "eth0", 1u << 20, 1u << 20)};
  EXPECT_EQ(lane_table(r).find("path "), std::string::npos);
}

}  // namespace
}  // namespace braid::cli
