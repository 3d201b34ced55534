// The path planner (src/core/paths/path_plan.hpp) on hosts as people have
// them: the crossed pairs, two interfaces in one subnet, gateways,
// IPv6 link-local, loopback.
#include "core/paths/path_plan.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace braid::paths {
namespace {

IpBytes v4(int a, int b, int c, int d) {
  IpBytes ip;
  ip.b = {static_cast<uint8_t>(a), static_cast<uint8_t>(b), static_cast<uint8_t>(c), static_cast<uint8_t>(d)};
  return ip;
}

IpBytes v6(std::initializer_list<uint16_t> groups) {
  IpBytes ip;
  ip.v6 = true;
  size_t i = 0;
  for (auto g : groups) {
    ip.b[i++] = static_cast<uint8_t>(g >> 8);
    ip.b[i++] = static_cast<uint8_t>(g & 0xFF);
  }
  return ip;
}

std::string text(const IpBytes& ip) {
  std::ostringstream o;
  if (!ip.v6) {
    o << int(ip.b[0]) << '.' << int(ip.b[1]) << '.' << int(ip.b[2]) << '.' << int(ip.b[3]);
  } else {
    o << std::hex;
    for (size_t i = 0; i < 16; i += 2) o << (i ? ":" : "") << ((ip.b[i] << 8) | ip.b[i + 1]);
  }
  return o.str();
}

Interface iface(std::string name, uint32_t index, std::vector<std::pair<IpBytes, int>> addrs) {
  Interface i{std::move(name), index, true, false, {}};
  for (auto& [ip, len] : addrs) i.addresses.push_back({ip, len, text(ip)});
  return i;
}

/// The kernel's connected routes for every address (what `ip route` shows as "proto kernel scope link").
std::vector<Route> connected(const std::vector<Interface>& is) {
  std::vector<Route> out;
  for (const auto& i : is)
    for (const auto& a : i.addresses) {
      IpBytes net = a.ip;
      for (size_t bit = static_cast<size_t>(a.prefix_len); bit < net.size() * 8; ++bit)
        net.b[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
      out.push_back({i.index, net, a.prefix_len, std::nullopt, 0});
    }
  return out;
}

RemoteAddress remote(const IpBytes& ip, uint32_t scope = 0) { return {ip, scope, text(ip)}; }

std::vector<std::string> describe(const PathPlan& p) {
  std::vector<std::string> out;
  for (const auto& x : p.paths) out.push_back(x.interface + " " + x.local + " -> " + x.remote);
  return out;
}

TEST(PathPlan, CrossedPairsAreNotPaths) {
  // Four links in four subnets (the 100/40/10/1 Mbit/s host): 4 x 4
  // address pairs, of which only the 4 on one link each are paths.
  std::vector<Interface> is;
  std::vector<RemoteAddress> rs;
  for (int k = 1; k <= 4; ++k) {
    is.push_back(iface("eth" + std::to_string(k), static_cast<uint32_t>(k + 1), {{v4(10, 91, k, 1), 24}}));
    rs.push_back(remote(v4(10, 91, k, 2)));
  }
  const auto plan = plan_paths(is, connected(is), rs);
  EXPECT_EQ(describe(plan), (std::vector<std::string>{"eth1 10.91.1.1 -> 10.91.1.2", "eth2 10.91.2.1 -> 10.91.2.2",
                                                       "eth3 10.91.3.1 -> 10.91.3.2", "eth4 10.91.4.1 -> 10.91.4.2"}));
  // Each of the 12 crossed pairs says why it was passed over.
  EXPECT_EQ(plan.passed_over.size(), 12u);
}

TEST(PathPlan, TwoInterfacesInOneSubnetAreTwoPaths) {
  // A laptop on Wi-Fi and Ethernet in the same LAN: one remote, two paths.
  std::vector<Interface> is = {iface("wlan0", 3, {{v4(192, 168, 1, 20), 24}}),
                               iface("eth0", 2, {{v4(192, 168, 1, 21), 24}})};
  const auto plan = plan_paths(is, connected(is), {remote(v4(192, 168, 1, 5))});
  EXPECT_EQ(describe(plan), (std::vector<std::string>{"wlan0 192.168.1.20 -> 192.168.1.5",
                                                       "eth0 192.168.1.21 -> 192.168.1.5"}));
  for (const auto& p : plan.paths) EXPECT_TRUE(p.on_link);
}

TEST(PathPlan, ASubnetWiderThanASlash24IsOneLink) {
  std::vector<Interface> is = {iface("eth0", 2, {{v4(10, 7, 0, 9), 23}})};
  const auto plan = plan_paths(is, connected(is), {remote(v4(10, 7, 1, 200))});
  ASSERT_EQ(plan.paths.size(), 1u);
  EXPECT_TRUE(plan.paths[0].on_link);
}

TEST(PathPlan, RemoteAddressesBehindOneGatewayAreOnePath) {
  // The receiver advertises two public addresses; this host reaches both
  // through the same router on the same interface: one path.
  std::vector<Interface> is = {iface("eth0", 2, {{v4(192, 168, 1, 20), 24}})};
  auto routes = connected(is);
  routes.push_back({2, v4(0, 0, 0, 0), 0, v4(192, 168, 1, 1), 100});
  const auto plan = plan_paths(is, routes, {remote(v4(203, 0, 113, 7)), remote(v4(198, 51, 100, 7))});
  EXPECT_EQ(describe(plan), (std::vector<std::string>{"eth0 192.168.1.20 -> 203.0.113.7"}));
  ASSERT_EQ(plan.passed_over.size(), 1u);
  EXPECT_EQ(plan.passed_over[0].remote, "198.51.100.7");
  EXPECT_FALSE(plan.paths[0].on_link);
}

TEST(PathPlan, TwoUplinksWithTheirOwnGatewaysAreTwoPaths) {
  // Ethernet and a tethered phone, each with its default route.
  std::vector<Interface> is = {iface("eth0", 2, {{v4(192, 168, 1, 20), 24}}),
                               iface("usb0", 5, {{v4(172, 20, 10, 3), 28}})};
  auto routes = connected(is);
  routes.push_back({2, v4(0, 0, 0, 0), 0, v4(192, 168, 1, 1), 100});
  routes.push_back({5, v4(0, 0, 0, 0), 0, v4(172, 20, 10, 1), 200});
  const auto plan = plan_paths(is, routes, {remote(v4(203, 0, 113, 7))});
  EXPECT_EQ(describe(plan), (std::vector<std::string>{"eth0 192.168.1.20 -> 203.0.113.7",
                                                       "usb0 172.20.10.3 -> 203.0.113.7"}));
}

TEST(PathPlan, AnOnLinkRemoteIsNotAlsoReachedThroughAGateway) {
  // The receiver shares eth1's subnet; eth0's default route would also
  // "reach" it, through a router, crossing subnets.
  std::vector<Interface> is = {iface("eth0", 2, {{v4(192, 168, 1, 20), 24}}),
                               iface("eth1", 3, {{v4(10, 91, 1, 1), 24}})};
  auto routes = connected(is);
  routes.push_back({2, v4(0, 0, 0, 0), 0, v4(192, 168, 1, 1), 100});
  const auto plan = plan_paths(is, routes, {remote(v4(10, 91, 1, 2))});
  EXPECT_EQ(describe(plan), (std::vector<std::string>{"eth1 10.91.1.1 -> 10.91.1.2"}));
}

TEST(PathPlan, NoRouteFromAnInterfaceIsNoPath) {
  std::vector<Interface> is = {iface("eth0", 2, {{v4(10, 1, 0, 1), 24}}), iface("eth1", 3, {{v4(10, 2, 0, 1), 24}})};
  const auto plan = plan_paths(is, connected(is), {remote(v4(10, 3, 0, 1))});
  EXPECT_TRUE(plan.paths.empty());
  EXPECT_EQ(plan.passed_over.size(), 2u);
}

TEST(PathPlan, WithoutARoutingTableOnlyOwnSubnetsCount) {
  std::vector<Interface> is = {iface("eth0", 2, {{v4(10, 1, 0, 1), 24}}), iface("eth1", 3, {{v4(10, 2, 0, 1), 24}})};
  const auto plan = plan_paths(is, {}, {remote(v4(10, 2, 0, 9))});
  EXPECT_EQ(describe(plan), (std::vector<std::string>{"eth1 10.2.0.1 -> 10.2.0.9"}));
}

TEST(PathPlan, ADownInterfaceIsPassedOverWithItsReason) {
  std::vector<Interface> is = {iface("eth0", 2, {{v4(10, 1, 0, 1), 24}})};
  is[0].up = false;
  const auto plan = plan_paths(is, connected(is), {remote(v4(10, 1, 0, 9))});
  EXPECT_TRUE(plan.paths.empty());
  ASSERT_EQ(plan.passed_over.size(), 1u);
  EXPECT_EQ(plan.passed_over[0].why, "the interface is down");
}

TEST(PathPlan, LinkLocalIpv6GoesOnlyThroughItsScope) {
  // A direct cable or a tethered phone with nothing but fe80:: addresses.
  std::vector<Interface> is = {iface("eth0", 2, {{v6({0xfe80, 0, 0, 0, 0, 0, 0, 1}), 64}}),
                               iface("usb0", 5, {{v6({0xfe80, 0, 0, 0, 0, 0, 0, 7}), 64}})};
  const auto plan = plan_paths(is, connected(is), {remote(v6({0xfe80, 0, 0, 0, 0, 0, 0, 2}), 5)});
  ASSERT_EQ(plan.paths.size(), 1u);
  EXPECT_EQ(plan.paths[0].interface, "usb0");
}

// The receiver advertises its fe80 address as well (it has no scope for
// us): an interface that reaches the receiver by a routable address does
// not make it a second path over the same link; one with nothing but
// link-local (a cable between two laptops, beside their Wi-Fi) does.
TEST(PathPlan, ALinkLocalRemoteIsAPathOnlyWhereNothingElseReachesTheReceiver) {
  std::vector<Interface> is = {
      iface("wlan0", 3, {{v4(192, 168, 1, 20), 24}, {v6({0xfe80, 0, 0, 0, 0, 0, 0, 0x20}), 64}}),
      iface("eth1", 4, {{v6({0xfe80, 0, 0, 0, 0, 0, 0, 0x41}), 64}})};
  // Link-local first in the receiver's list: still planned last. Its two
  // fe80 addresses (one per link of its own): which is on eth1's cable is
  // not known, so both are tried there (the wrong one fails its connect).
  const auto plan = plan_paths(is, connected(is),
                               {remote(v6({0xfe80, 0, 0, 0, 0, 0, 0, 0x99})), remote(v4(192, 168, 1, 30)),
                                remote(v6({0xfe80, 0, 0, 0, 0, 0, 0, 0x98}))});
  EXPECT_EQ(describe(plan), (std::vector<std::string>{"wlan0 192.168.1.20 -> 192.168.1.30",
                                                      "eth1 fe80:0:0:0:0:0:0:41 -> fe80:0:0:0:0:0:0:99",
                                                      "eth1 fe80:0:0:0:0:0:0:41 -> fe80:0:0:0:0:0:0:98"}));
  bool told = false;
  for (const auto& p : plan.passed_over)
    told = told || (p.interface == "wlan0" && p.why.find("routable address already") != std::string::npos);
  EXPECT_TRUE(told);
}

TEST(PathPlan, LoopbackGoesWithLoopbackOnly) {
  std::vector<Interface> is = {iface("lo", 1, {{v4(127, 0, 0, 1), 8}}), iface("eth0", 2, {{v4(10, 1, 0, 1), 24}})};
  is[0].loopback = true;
  const auto plan = plan_paths(is, connected(is), {remote(v4(127, 0, 0, 1)), remote(v4(10, 1, 0, 1))});
  EXPECT_EQ(describe(plan), (std::vector<std::string>{"lo 127.0.0.1 -> 127.0.0.1", "eth0 10.1.0.1 -> 10.1.0.1"}));
}

TEST(PathPlan, IpBytesPrefixes) {
  EXPECT_TRUE(v4(10, 7, 0, 9).same_prefix(v4(10, 7, 1, 200), 23));
  EXPECT_FALSE(v4(10, 7, 0, 9).same_prefix(v4(10, 7, 2, 1), 23));
  EXPECT_TRUE(v4(1, 2, 3, 4).same_prefix(v4(9, 9, 9, 9), 0));
  EXPECT_FALSE(v4(1, 2, 3, 4).same_prefix(v6({0x102, 0x304}), 0));
  EXPECT_TRUE(v6({0xfe80, 0, 0, 0, 0, 0, 0, 1}).is_link_local());
  EXPECT_TRUE(v4(169, 254, 3, 3).is_link_local());
  EXPECT_TRUE(v6({0, 0, 0, 0, 0, 0, 0, 1}).is_loopback());
}

TEST(PathPlan, AnAvoidedInterfaceIsUsedOnlyWhenNothingElseReaches) {
  std::vector<Interface> is = {iface("eth0", 2, {{v4(10, 1, 0, 1), 24}}), iface("wwan0", 3, {{v4(10, 2, 0, 1), 24}})};
  is[1].policy = InterfacePolicy::avoid;
  const auto both = plan_paths(is, connected(is), {remote(v4(10, 1, 0, 9)), remote(v4(10, 2, 0, 9))});
  EXPECT_EQ(describe(both), (std::vector<std::string>{"eth0 10.1.0.1 -> 10.1.0.9"}));
  const auto only = plan_paths(is, connected(is), {remote(v4(10, 2, 0, 9))});
  EXPECT_EQ(describe(only), (std::vector<std::string>{"wwan0 10.2.0.1 -> 10.2.0.9"}));
}

TEST(PathPlan, ABackupInterfaceIsAPathMarkedBackup) {
  std::vector<Interface> is = {iface("eth0", 2, {{v4(10, 1, 0, 1), 24}}), iface("wwan0", 3, {{v4(10, 2, 0, 1), 24}})};
  is[1].policy = InterfacePolicy::backup;
  const auto plan = plan_paths(is, connected(is), {remote(v4(10, 1, 0, 9)), remote(v4(10, 2, 0, 9))});
  ASSERT_EQ(plan.paths.size(), 2u);
  EXPECT_EQ(plan.paths[0].policy, InterfacePolicy::normal);
  EXPECT_EQ(plan.paths[1].policy, InterfacePolicy::backup);
}

}  // namespace
}  // namespace braid::paths
