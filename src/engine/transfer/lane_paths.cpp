#include "engine/transfer/lane_paths.hpp"

#include <algorithm>

namespace braid::transfer {
namespace {

// "[tcp:|udp:]LOCAL=REMOTE:PORT"; `udp` keeps its value without a prefix.
bool parse_ip_spec(std::string spec, uint16_t port, lanes::Endpoint& local, lanes::Endpoint& remote, bool& udp) {
  if (spec.rfind("udp:", 0) == 0) {
    udp = true;
    spec = spec.substr(4);
  } else if (spec.rfind("tcp:", 0) == 0) {
    udp = false;
    spec = spec.substr(4);
  }
  auto eq = spec.find('=');
  if (eq == std::string::npos) return false;
  auto l = lanes::parse_numeric_endpoint(spec.substr(0, eq), 0);
  auto r = lanes::parse_numeric_endpoint(spec.substr(eq + 1), port);
  if (!l || !r || l->family() != r->family()) return false;
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
      if (!parse_ip_spec(spec, plan.default_port, l, r, udp)) {
        skipped.emplace_back(spec, "not [tcp:|udp:]LOCAL=REMOTE:PORT, exec:COMMAND, pty:COMMAND or unix:PATH");
        continue;
      }
      add(l, r, udp);
    }
    return out;
  }
  const auto locals = lanes::interface_addresses();
  struct Pair {
    lanes::Endpoint l, r;
  };
  std::vector<Pair> pairs;
  for (const auto& text : plan.advertised) {
    auto r = lanes::parse_numeric_endpoint(text, plan.default_port);
    if (!r || r->is_link_local() || r->is_loopback() != plan.first_remote.is_loopback()) continue;
    for (const auto& l : locals) {
      if (l.family() != r->family() || l.is_loopback() != r->is_loopback()) continue;
      pairs.push_back({l, *r});
    }
  }
  auto is_first = [&](const Pair& p) {
    return p.r.str() == plan.first_remote.str() && p.l.same_host(plan.first_local);
  };
  // The bootstrap lane's own path comes first; it already has one lane
  // (with UDP lanes it carries no data, so that path gets its full count).
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Pair& a, const Pair& b) { return is_first(a) && !is_first(b); });
  const int streams = std::max(1, plan.streams);
  for (const auto& p : pairs)
    for (int k = is_first(p) && !plan.udp_default ? 1 : 0; k < streams; ++k) add(p.l, p.r, plan.udp_default);
  if (pairs.empty())  // nothing usable advertised: more streams on the bootstrap path
    for (int k = plan.udp_default ? 0 : 1; k < streams; ++k) add(std::nullopt, plan.first_remote, plan.udp_default);
  return out;
}

}  // namespace braid::transfer
