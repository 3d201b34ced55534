#include "engine/transfer/lane_paths.hpp"

#include <netinet/in.h>

#include <algorithm>

#include "engine/lanes/host_network.hpp"

namespace braid::transfer {
namespace {

// "[tcp:|udp:]LOCAL=REMOTE:PORT"; `udp` keeps its value without a prefix.
// LOCAL is an address of this host or the name of one of its interfaces;
// either way the lane is bound to that interface (`interface`).
bool parse_ip_spec(std::string spec, uint16_t port, const std::vector<paths::Interface>& interfaces,
                   lanes::Endpoint& local, lanes::Endpoint& remote, bool& udp, std::string& interface) {
  if (spec.rfind("udp:", 0) == 0) {
    udp = true;
    spec = spec.substr(4);
  } else if (spec.rfind("tcp:", 0) == 0) {
    udp = false;
    spec = spec.substr(4);
  }
  auto eq = spec.find('=');
  if (eq == std::string::npos) return false;
  const std::string left = spec.substr(0, eq);
  auto r = lanes::parse_numeric_endpoint(spec.substr(eq + 1), port);
  if (!r) return false;
  auto l = lanes::parse_numeric_endpoint(left, 0);
  const paths::IpBytes want = lanes::ip_bytes_of(*r);
  for (const auto& i : interfaces) {
    for (const auto& a : i.addresses) {
      if (l ? a.text == l->host() : i.name == left && a.ip.v6 == want.v6 && !a.ip.is_link_local()) {
        interface = i.name;
        if (!l) l = lanes::parse_numeric_endpoint(a.text, 0);
        break;
      }
    }
    if (!interface.empty()) break;
  }
  if (!l || l->family() != r->family()) return false;
  local = *l;
  remote = *r;
  return true;
}

}  // namespace

std::vector<LanePath> plan_lane_paths(const LanePlan& plan, std::vector<std::pair<std::string, std::string>>& skipped) {
  std::vector<LanePath> out;
  auto add = [&](const std::optional<lanes::Endpoint>& l, const lanes::Endpoint& r, bool udp) {
    LanePath p;
    p.spec = {udp ? session::LaneKind::udp : session::LaneKind::tcp, l ? l->str() : "", r.str()};
    p.local = l;
    p.remote = r;
    out.push_back(p);
  };
  if (!plan.specs.empty()) {
    for (const auto& spec : plan.specs) {
      // A byte-stream lane: a command's stdin/stdout (a socketpair), or its
      // terminal (a pty: a serial-like line), e.g. `exec:ssh host braid relay 127.0.0.1:7878`.
      for (const char* prefix : {"exec:", "pty:"}) {
        if (spec.rfind(prefix, 0) != 0) continue;
        LanePath p;
        p.command = spec.substr(std::string(prefix).size());
        p.pty = prefix[0] == 'p';
        p.spec = {session::LaneKind::stream, "", spec};
        if (p.command.empty()) skipped.emplace_back(spec, "no command after " + std::string(prefix));
        else out.push_back(p);
      }
      if (spec.rfind("exec:", 0) == 0 || spec.rfind("pty:", 0) == 0) continue;
      // A byte-stream lane over a Unix-domain socket (recv --listen unix:PATH).
      if (spec.rfind("unix:", 0) == 0) {
        LanePath p;
        p.unix_path = spec.substr(5);
        p.spec = {session::LaneKind::stream, "", spec};
        if (p.unix_path.empty()) skipped.emplace_back(spec, "no socket path after unix:");
        else out.push_back(p);
        continue;
      }
      lanes::Endpoint l, r;
      bool udp = plan.udp_default;
      std::string interface;
      if (!parse_ip_spec(spec, plan.default_port, plan.interfaces, l, r, udp, interface)) {
        skipped.emplace_back(spec, "not [tcp:|udp:]LOCAL=REMOTE:PORT (LOCAL an address or interface of this host), "
                                   "exec:COMMAND, pty:COMMAND or unix:PATH");
        continue;
      }
      add(l, r, udp);
      out.back().interface = interface;
      out.back().spec.interface = interface;
    }
    return out;
  }
  // Discovered: the receiver's advertised addresses of the bootstrap lane's
  // kind (loopback or not), through every interface that routes to them.
  std::vector<paths::RemoteAddress> remotes;
  std::vector<lanes::Endpoint> endpoints;
  // The address lane 0 reached first: of two behind one next hop it is the
  // one known to answer (another may be a container bridge's, or NATed).
  std::vector<std::string> advertised = plan.advertised;
  std::stable_partition(advertised.begin(), advertised.end(),
                        [&](const std::string& a) { return a == plan.first_remote.str(); });
  for (std::string text : advertised) {
    // A link-local address comes with the receiver's scope ("%r2"), which
    // names its interface, not ours: dropped; the planner pairs the address
    // with our interfaces (scope 0), and the lane gets the scope of its own.
    if (const auto pct = text.find('%'); pct != std::string::npos) {
      const auto close = text.find(']', pct);
      text.erase(pct, (close == std::string::npos ? text.size() : close) - pct);
    }
    auto r = lanes::parse_numeric_endpoint(text, plan.default_port);
    if (!r || r->is_loopback() != plan.first_remote.is_loopback()) continue;
    if (r->is_link_local() && r->family() != AF_INET6) continue;
    remotes.push_back({lanes::ip_bytes_of(*r), 0, r->str()});
    endpoints.push_back(*r);
  }
  std::vector<paths::Interface> interfaces = plan.interfaces;
  for (auto& i : interfaces) {
    auto named = [&](const std::vector<std::string>& v) { return std::find(v.begin(), v.end(), i.name) != v.end(); };
    i.policy = named(plan.avoid) ? paths::InterfacePolicy::avoid
               : named(plan.backup) ? paths::InterfacePolicy::backup
                                    : paths::InterfacePolicy::normal;
  }
  const paths::PathPlan planned = paths::plan_paths(interfaces, plan.routes, remotes);
  for (const auto& p : planned.passed_over) skipped.emplace_back(p.interface + " -> " + p.remote, p.why);
  struct Pair {
    lanes::Endpoint l, r;
    std::string interface;
    bool backup = false;
  };
  std::vector<Pair> pairs;
  for (const auto& p : planned.paths) {
    auto l = lanes::parse_numeric_endpoint(p.local, 0);
    const auto at = std::find_if(remotes.begin(), remotes.end(), [&](const auto& r) { return r.text == p.remote; });
    if (!l || at == remotes.end()) continue;
    lanes::Endpoint r = endpoints[static_cast<size_t>(at - remotes.begin())];
    if (r.is_link_local())  // reached through this interface: its scope
      reinterpret_cast<sockaddr_in6*>(&r.addr)->sin6_scope_id = p.interface_index;
    pairs.push_back({*l, r, p.interface, p.policy == paths::InterfacePolicy::backup});
  }
  auto is_first = [&](const Pair& p) {
    return p.r.str() == plan.first_remote.str() && p.l.same_host(plan.first_local);
  };
  // The bootstrap lane's own path comes first; it already has one lane
  // (with UDP lanes it carries no data, so that path gets its full count).
  // Lanes go round the paths, one each per round, so that a `--max-lanes`
  // cap still leaves every path a lane before any gets its second.
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Pair& a, const Pair& b) { return is_first(a) && !is_first(b); });
  const int streams = std::max(1, plan.streams);
  for (int round = 0; round < streams; ++round)
    for (const auto& p : pairs) {
      if (round == 0 && is_first(p) && plan.lane0_alive && !plan.udp_default) continue;  // lane 0 is its first
      add(p.l, p.r, plan.udp_default);
      out.back().interface = p.interface;
      out.back().spec.interface = p.interface;
      out.back().spec.backup = p.backup;
    }
  if (pairs.empty())  // nothing usable advertised: more streams on the bootstrap path
    for (int k = plan.udp_default || !plan.lane0_alive ? 0 : 1; k < streams; ++k)
      add(std::nullopt, plan.first_remote, plan.udp_default);
  return out;
}

}  // namespace braid::transfer
