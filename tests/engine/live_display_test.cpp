// The live display's frames (pure: render_frame, group_by_path): grouped
// per path with ports dropped and sorted, every line within the width it is
// given however long the addresses, many paths folded into one row.
#include <gtest/gtest.h>

#include "engine/transfer/live_display.hpp"

namespace braid::transfer {
namespace {

LiveTransfer sixteen_lanes() {
  LiveTransfer t;
  t.label = "send 'laptop'";
  t.total = 64 << 20;
  t.done = 24 << 20;
  t.elapsed = 1.5;
  // Unsorted on purpose, as lanes open: two paths, eight streams each.
  for (uint32_t i = 0; i < 16; ++i) {
    const std::string local = i % 2 ? "192.168.1.20:" : "10.0.0.7:";
    t.lanes.push_back({i, local + std::to_string(40000 + i), "192.168.1.30:7878", (i + 1) * 100000ull, i != 5});
  }
  return t;
}

TEST(LiveDisplay, AddressesDropTheirPort) {
  EXPECT_EQ(address_of("127.0.0.1:7878"), "127.0.0.1");
  EXPECT_EQ(address_of("[fe80::1%eth0]:7878"), "fe80::1%eth0");
  EXPECT_EQ(address_of("::1"), "::1");  // a bare IPv6 address keeps its colons
  EXPECT_EQ(address_of("exec:ssh host braid relay"), "exec:ssh host braid relay");
  EXPECT_EQ(address_of("unix:/run/braid.sock"), "unix:/run/braid.sock");
}

TEST(LiveDisplay, LanesAreGroupedPerPathAndSorted) {
  const auto paths = group_by_path(sixteen_lanes().lanes);
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0].local, "10.0.0.7");
  EXPECT_EQ(paths[1].local, "192.168.1.20");
  EXPECT_EQ(paths[0].remote, "192.168.1.30");
  EXPECT_EQ(paths[0].lanes, 8u);
  EXPECT_EQ(paths[1].lanes, 8u);
  EXPECT_EQ(paths[1].alive, 7u);  // lane 5 closed
}

TEST(LiveDisplay, EveryLineFitsTheWidth) {
  LiveTransfer t = sixteen_lanes();
  t.lanes.push_back({16, "[2001:db8:1234:5678:9abc:def0:1234:5678]:40123", "[2001:db8:ffff:eeee:dddd:cccc:bbbb:aaaa]:7878",
                     12345, true});
  auto paths = group_by_path(t.lanes);
  for (auto& p : paths) p.rate = 1.2e8;
  for (size_t width = 20; width <= 200; ++width) {
    const auto lines = render_frame(t, paths, 2.4e8, width);
    ASSERT_EQ(lines.size(), 1 + paths.size()) << "width " << width;
    for (const auto& l : lines) EXPECT_LE(l.size(), width) << "width " << width << ": '" << l << "'";
  }
  const auto lines = render_frame(t, paths, 2.4e8, 79);
  EXPECT_NE(lines[0].find(" 37% ["), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("24.0 MiB / 64.0 MiB"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("1.92 Gbit/s"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("7/8 lanes"), std::string::npos) << lines[2];
}

TEST(LiveDisplay, ManyPathsFoldIntoOneRow) {
  LiveTransfer t;
  t.label = "recv 'vm'";
  t.total = 100;
  t.done = 50;
  for (uint32_t i = 0; i < 12; ++i)
    t.lanes.push_back({i, "10.0.0." + std::to_string(i + 1) + ":7878", "10.0.1.1:5000", 10, true});
  const auto paths = group_by_path(t.lanes);
  const auto lines = render_frame(t, paths, 0, 80, 8);
  ASSERT_EQ(lines.size(), 1u + 8u);
  EXPECT_NE(lines.back().find("+ 5 more paths"), std::string::npos) << lines.back();
  EXPECT_NE(lines.back().find("5 lanes"), std::string::npos) << lines.back();
}

}  // namespace
}  // namespace braid::transfer
