// Which paths the sender's lanes take: the `--lane` specs as given, or the
// path planner's paths (core/paths/path_plan.hpp: one per interface that
// routes to an advertised address, same next hop once), `--streams` lanes
// on each, each lane bound to its interface. The session machine gets the
// PathSpecs; the engine keeps what it needs to open each.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/paths/path_plan.hpp"
#include "core/session/lane_traits.hpp"
#include "engine/lanes/endpoint.hpp"

namespace braid::transfer {

struct LanePath {
  session::PathSpec spec;
  std::optional<lanes::Endpoint> local;  // TCP, UDP: the address to bind
  /// TCP, UDP: the interface the lane's packets must leave through
  /// (SO_BINDTODEVICE); empty: wherever the kernel routes them.
  std::string interface;
  lanes::Endpoint remote;
  /// Stream lanes: the command whose stdin/stdout carry the lane (exec:, pty:).
  std::string command;
  bool pty = false;
  /// Stream lanes over a Unix-domain socket (unix:PATH).
  std::string unix_path;
};

struct LanePlan {
  std::vector<std::string> specs;  // --lane, in order; empty: discover
  int streams = 2;
  bool udp_default = false;
  lanes::Endpoint first_local, first_remote;  // the bootstrap lane's path
  std::vector<std::string> advertised;        // the receiver's addresses
  uint16_t default_port = 7878;
  /// This host's network as the planner sees it (lanes::read_interfaces,
  /// lanes::read_routes), when the paths are discovered.
  std::vector<paths::Interface> interfaces;
  std::vector<paths::Route> routes;
  /// --backup / --avoid: interfaces by name.
  std::vector<std::string> backup, avoid;
  /// Lane 0 is open (it counts as its path's first lane); once it closed
  /// with its path, that path gets all its streams when it returns.
  bool lane0_alive = true;
};

/// The paths for further lanes (the bootstrap lane is not among them), in
/// the order they open: round the paths, one lane each per round. A
/// spec that does not parse, or an (interface, address) pair the planner
/// passed over, is in `skipped` with its reason.
std::vector<LanePath> plan_lane_paths(const LanePlan& plan, std::vector<std::pair<std::string, std::string>>& skipped);

/// The key under which a PathSpec's LanePath is kept.
inline std::string path_key(const session::PathSpec& p) { return p.remote + "|" + p.local; }

}  // namespace braid::transfer
