// A minimal `braid peers` of the discovery branch, for its own tests: the
// pairing branch's peers_command (labels, rename, forget, print_peers) is
// the real one. Merging: keep that one, drop this file, and fill its
// VisiblePeer list from discovery::browse_visible (engine/discovery).
// Both define add_peers_command on purpose: the link fails until one goes.
#pragma once

#include <CLI/CLI.hpp>

namespace braid::cli {

/// `braid peers [--visible] [--wait S]`: the pinned peers, and with
/// --visible the braid receivers announcing themselves on the local network.
void add_peers_command(CLI::App& app);

}  // namespace braid::cli
