#include "cli/peers_visible_command.hpp"

#include <iostream>
#include <memory>

#include "engine/discovery/discovery.hpp"
#include "engine/security/files.h"
#include "engine/security/known_peers.h"
#include "engine/transfer/exit_codes.hpp"

namespace braid::cli {
namespace {

struct PeersArgs {
  bool visible = false;
  double wait = 2.0;
};

int run_peers(const PeersArgs& a) {
  auto dir = security::default_config_dir();
  if (!dir) {
    std::cerr << "braid peers: " << dir.error().message << "\n";
    return transfer::kExitFailure;
  }
  auto known = security::KnownPeers::load_in(dir.value());
  if (!known) {
    std::cerr << "braid peers: " << known.error().message << "\n";
    return transfer::kExitFailure;
  }
  std::vector<discovery::VisiblePeer> seen;
  if (a.visible) {
    std::string error;
    seen = discovery::browse(Duration::seconds_f(a.wait), {}, error);
    if (!error.empty()) std::cerr << "braid peers: cannot look on the local network: " << error << "\n";
  }
  const auto visible_with = [&](const std::string& fp) -> const discovery::VisiblePeer* {
    for (const auto& p : seen)
      if (p.fingerprint == fp) return &p;
    return nullptr;
  };
  std::cout << "pinned (" << known.value().file().string() << "):\n";
  if (known.value().entries().empty()) std::cout << "  none yet: a peer is pinned when it first pairs with a code\n";
  for (const auto& e : known.value().entries()) {
    const std::string fp = e.fingerprint.to_string();
    std::cout << "  " << e.name << "  " << fp;
    if (const auto* p = visible_with(fp)) std::cout << "  visible now as '" << p->name << "' at " << p->addresses.front();
    std::cout << "\n";
  }
  if (!a.visible) return 0;
  std::cout << "visible now on the local network:\n";
  if (seen.empty()) std::cout << "  none\n";
  for (const auto& p : seen) {
    std::cout << "  " << p.name;
    if (p.rendezvous) std::cout << "  number " << *p.rendezvous;
    if (p.fingerprint) std::cout << "  " << *p.fingerprint;
    for (const auto& addr : p.addresses) std::cout << "  " << addr;
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

void add_peers_command(CLI::App& app) {
  auto args = std::make_shared<PeersArgs>();
  CLI::App* cmd = app.add_subcommand("peers", "List pinned peers (and, with --visible, braid receivers on the local network)");
  cmd->add_flag("--visible", args->visible, "Also look for braid receivers announcing themselves on the local network");
  cmd->add_option("--wait", args->wait, "How long to look, in seconds (default 2)")->check(CLI::Range(0.1, 60.0));
  cmd->callback([args] { std::exit(run_peers(*args)); });
}

}  // namespace braid::cli
