// `braid peers`: the peers this host trusts (known_peers, by key, under the
// user's labels), and `braid peers rename OLD NEW`, `braid peers forget
// LABEL` (OLD and LABEL may also be a fingerprint prefix, as listed).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/security/fingerprint.h"
#include "engine/security/known_peers.h"

namespace braid::cli {

void add_peers_command(CLI::App& app);

// A braid receiver seen on the local network now (discovery fills these in).
struct VisiblePeer {
  std::string name;     // the name it announces (its host name)
  std::string number;   // the public number of its pairing code, if it announces one
  std::string address;  // ADDR:PORT
  std::optional<security::Fingerprint> fingerprint;  // if announced or learnt
};

// The listing `braid peers` prints: every pinned peer (label, short
// fingerprint, when it paired, the name it claims), then the peers visible
// now, each marked with its label when its key is pinned.
void print_peers(std::ostream& out, const security::KnownPeers& known, const std::vector<VisiblePeer>& visible);

}  // namespace braid::cli
