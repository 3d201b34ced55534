#pragma once

#include <CLI/CLI.hpp>

namespace braid::cli {

/// `braid peers [--visible] [--wait S]`: the pinned peers, and with
/// --visible the braid receivers announcing themselves on the local network.
void add_peers_command(CLI::App& app);

}  // namespace braid::cli
