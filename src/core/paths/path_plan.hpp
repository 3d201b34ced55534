// Which paths a sender's lanes take, decided from what the host looks like:
// its interfaces with their addresses, its routing table and the addresses
// the receiver advertised. Pure: the engine reads the interfaces and routes
// (getifaddrs, rtnetlink) and hands them in; the session simulator and the
// tests hand in made-up hosts.
//
// A path is (local interface, local address, remote address), and a lane on
// it is bound to its interface (SO_BINDTODEVICE) so its packets really leave
// there. The rules, in order:
//   - a remote address is reached from an interface only if that interface
//     has a route to it (its own subnet, or a gateway route through it);
//   - a remote that is on the link of some interface (a route without a
//     gateway) is reached only through such interfaces: sending it through a
//     gateway elsewhere would cross subnets, and its acks would come back
//     another way;
//   - pairs that leave through the same interface towards the same next hop
//     (one gateway, or one on-link host) are one path, not two: only the
//     first remote address in the receiver's order is kept;
//   - loopback goes with loopback only, and a link-local IPv6 remote only
//     through the interface whose scope it carries.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace braid::paths {

/// An IP address as bytes: 4 (IPv4) or 16 (IPv6) significant bytes.
struct IpBytes {
  bool v6 = false;
  std::array<uint8_t, 16> b{};
  size_t size() const { return v6 ? 16 : 4; }
  bool operator==(const IpBytes& o) const;
  /// The first `bits` bits are the same.
  bool same_prefix(const IpBytes& o, int bits) const;
  bool is_loopback() const;
  bool is_link_local() const;  // fe80::/10 or 169.254/16
};

struct InterfaceAddress {
  IpBytes ip;
  int prefix_len = 0;
  std::string text;  // as the engine prints and binds it ("10.1.2.3", "fe80::1%eth0")
};

/// How the user wants an interface used (`send --backup IFACE`, `--avoid IFACE`).
enum class InterfacePolicy {
  normal,
  backup,  // its paths carry data only while no other path does (a phone's cellular link)
  avoid,   // its paths are not used at all while any other path exists
};

struct Interface {
  std::string name;
  uint32_t index = 0;
  bool up = true;
  bool loopback = false;
  std::vector<InterfaceAddress> addresses;
  InterfacePolicy policy = InterfacePolicy::normal;
};

struct Route {
  uint32_t interface = 0;  // output interface index
  IpBytes destination;
  int prefix_len = 0;
  std::optional<IpBytes> gateway;
  uint32_t metric = 0;
};

struct RemoteAddress {
  IpBytes ip;
  uint32_t scope = 0;  // link-local IPv6: the interface index it belongs to (0: any)
  std::string text;
};

struct PlannedPath {
  std::string interface;
  uint32_t interface_index = 0;
  std::string local;   // the interface's address to bind
  std::string remote;  // the remote address (as given)
  bool on_link = false;
  InterfacePolicy policy = InterfacePolicy::normal;
  bool on_link_local = false;  // to a link-local remote (which of our links it is on is not known)
};

/// Why a (interface, remote) pair was not made a path: for `--log` and tests.
struct PassedOver {
  std::string interface, remote, why;
};

struct PathPlan {
  std::vector<PlannedPath> paths;
  std::vector<PassedOver> passed_over;
};

/// The paths from `interfaces` (with `routes`, the main table) to the
/// `remotes`, in the remotes' order then the interfaces'. With no routes at
/// all (none could be read), an interface reaches the remotes in its own
/// subnets only.
PathPlan plan_paths(const std::vector<Interface>& interfaces, const std::vector<Route>& routes,
                    const std::vector<RemoteAddress>& remotes);

}  // namespace braid::paths
