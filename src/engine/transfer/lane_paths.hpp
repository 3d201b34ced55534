// Which paths the sender's lanes take: the `--lane` specs as given, or one
// path per (local interface, advertised address) pair of one family and one
// kind (loopback with loopback only), `--streams` lanes on each. The session
// machine gets the PathSpecs; the engine keeps what it needs to open each.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/session/lane_traits.hpp"
#include "engine/lanes/endpoint.hpp"

namespace braid::transfer {

struct LanePath {
  session::PathSpec spec;
  std::optional<lanes::Endpoint> local;  // TCP, UDP: the interface to leave through
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
};

/// The paths for further lanes (the bootstrap lane is not among them). A
/// spec that does not parse is skipped with its reason in `skipped`.
std::vector<LanePath> plan_lane_paths(const LanePlan& plan, std::vector<std::pair<std::string, std::string>>& skipped);

/// The key under which a PathSpec's LanePath is kept.
inline std::string path_key(const session::PathSpec& p) { return p.remote + "|" + p.local; }

}  // namespace braid::transfer
