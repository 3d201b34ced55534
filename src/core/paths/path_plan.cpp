#include "core/paths/path_plan.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace braid::paths {

bool IpBytes::operator==(const IpBytes& o) const {
  return v6 == o.v6 && std::equal(b.begin(), b.begin() + static_cast<long>(size()), o.b.begin());
}

bool IpBytes::same_prefix(const IpBytes& o, int bits) const {
  if (v6 != o.v6) return false;
  bits = std::clamp(bits, 0, static_cast<int>(size() * 8));
  const int whole = bits / 8, rest = bits % 8;
  if (!std::equal(b.begin(), b.begin() + whole, o.b.begin())) return false;
  if (rest == 0) return true;
  const auto mask = static_cast<uint8_t>(0xFF << (8 - rest));
  return (b[static_cast<size_t>(whole)] & mask) == (o.b[static_cast<size_t>(whole)] & mask);
}

bool IpBytes::is_loopback() const {
  if (!v6) return b[0] == 127;
  for (size_t i = 0; i < 15; ++i)
    if (b[i] != 0) return false;
  return b[15] == 1;
}

bool IpBytes::is_link_local() const {
  if (!v6) return b[0] == 169 && b[1] == 254;
  return b[0] == 0xFE && (b[1] & 0xC0) == 0x80;
}

namespace {

/// How an interface reaches a remote: the most specific of its routes that
/// covers it (lowest metric among equals).
struct Reach {
  bool routable = false;
  bool on_link = false;
  IpBytes next_hop;
};

Reach reach(const Interface& i, const std::vector<Route>& routes, const RemoteAddress& r) {
  Reach out;
  if (routes.empty()) {
    // No routing table: the interface's own subnets only.
    for (const auto& a : i.addresses)
      if (a.ip.v6 == r.ip.v6 && a.ip.same_prefix(r.ip, a.prefix_len)) return {true, true, r.ip};
    return out;
  }
  const Route* best = nullptr;
  for (const auto& route : routes) {
    if (route.interface != i.index || route.destination.v6 != r.ip.v6) continue;
    if (!route.destination.same_prefix(r.ip, route.prefix_len)) continue;
    if (!best || route.prefix_len > best->prefix_len ||
        (route.prefix_len == best->prefix_len && route.metric < best->metric))
      best = &route;
  }
  if (!best) return out;
  out.routable = true;
  out.on_link = !best->gateway;
  out.next_hop = best->gateway ? *best->gateway : r.ip;
  return out;
}

/// The address to bind on `i` towards `r`: one in the remote's subnet if
/// there is one, else the interface's first of the family that is neither
/// link-local (unless the remote is) nor loopback (unless the remote is).
const InterfaceAddress* source_for(const Interface& i, const RemoteAddress& r) {
  const InterfaceAddress* any = nullptr;
  for (const auto& a : i.addresses) {
    if (a.ip.v6 != r.ip.v6) continue;
    if (a.ip.is_link_local() != r.ip.is_link_local()) continue;
    if (a.ip.is_loopback() != r.ip.is_loopback()) continue;
    if (a.ip.same_prefix(r.ip, a.prefix_len)) return &a;
    if (!any) any = &a;
  }
  return any;
}

}  // namespace

PathPlan plan_paths(const std::vector<Interface>& interfaces, const std::vector<Route>& routes,
                    const std::vector<RemoteAddress>& remotes) {
  PathPlan plan;
  // (interface, next hop): one path each.
  std::set<std::pair<uint32_t, std::string>> taken;
  auto hop_key = [](const IpBytes& ip) { return std::string(ip.b.begin(), ip.b.begin() + static_cast<long>(ip.size())); };
  // Link-local remotes last, and only through interfaces no other path
  // takes: on a LAN the receiver's fe80 address is reachable wherever its
  // routable ones are, and one link must not be two paths. A direct cable
  // or a tethered phone with nothing but link-local is a path of its own.
  std::vector<RemoteAddress> ordered;
  for (int link_local = 0; link_local < 2; ++link_local)
    for (const auto& r : remotes)
      if (r.ip.is_link_local() == (link_local == 1)) ordered.push_back(r);
  for (const auto& r : ordered) {
    struct Candidate {
      const Interface* i;
      const InterfaceAddress* src;
      Reach how;
    };
    std::vector<Candidate> candidates;
    bool any_on_link = false;
    for (const auto& i : interfaces) {
      auto pass = [&](std::string why) { plan.passed_over.push_back({i.name, r.text, std::move(why)}); };
      if (!i.up) {
        pass("the interface is down");
        continue;
      }
      if (i.loopback != r.ip.is_loopback()) continue;  // not worth a line: never a path
      if (r.ip.is_link_local() && r.scope != 0 && r.scope != i.index) continue;
      // Which of the receiver's fe80 addresses is on which of our links is
      // not known: each is tried on each link-local-only interface, and a
      // pair on different links fails its connect and is given up.
      if (r.ip.is_link_local() && std::any_of(plan.paths.begin(), plan.paths.end(), [&](const PlannedPath& p) {
            return p.interface_index == i.index && !p.on_link_local;
          })) {
        pass("the interface reaches the receiver by a routable address already");
        continue;
      }
      const InterfaceAddress* src = source_for(i, r);
      if (!src) {
        pass(r.ip.v6 ? "no usable IPv6 address on it" : "no IPv4 address on it");
        continue;
      }
      Reach how = i.loopback ? Reach{true, true, r.ip} : r.ip.is_link_local() ? Reach{true, true, r.ip} : reach(i, routes, r);
      if (!how.routable) {
        pass("no route to it from this interface");
        continue;
      }
      any_on_link = any_on_link || how.on_link;
      candidates.push_back({&i, src, how});
    }
    for (const auto& c : candidates) {
      if (any_on_link && !c.how.on_link) {
        plan.passed_over.push_back({c.i->name, r.text, "it is on another interface's link: this would cross subnets"});
        continue;
      }
      if (!taken.insert({c.i->index, hop_key(c.how.next_hop)}).second) {
        plan.passed_over.push_back({c.i->name, r.text, "same interface and next hop as an earlier path"});
        continue;
      }
      plan.paths.push_back({c.i->name, c.i->index, c.src->text, r.text, c.how.on_link, c.i->policy, r.ip.is_link_local()});
    }
  }
  // Interfaces to avoid are used only when nothing else reaches the peer.
  const bool other = std::any_of(plan.paths.begin(), plan.paths.end(),
                                 [](const PlannedPath& p) { return p.policy != InterfacePolicy::avoid; });
  if (other)
    std::erase_if(plan.paths, [&](const PlannedPath& p) {
      if (p.policy != InterfacePolicy::avoid) return false;
      plan.passed_over.push_back({p.interface, p.remote, "avoided (--avoid): other paths reach the receiver"});
      return true;
    });
  return plan;
}

}  // namespace braid::paths
