// This host's long-term identity, its TLS context and its known peers,
// loaded once per process (from $XDG_CONFIG_HOME/braid, or a given directory).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/security/known_peers.h"
#include "engine/security/session.h"

namespace braid::transfer {

struct LocalHost {
  std::filesystem::path dir;
  std::optional<security::Identity> identity;
  std::optional<security::TlsContext> tls;

  /// Loads (creating on first use) the identity in `dir`, or the default
  /// config directory. Empty `error` on success.
  static std::unique_ptr<LocalHost> load(const std::optional<std::filesystem::path>& dir, std::string& error);
  /// A fresh view of the known-peers file (one per session: each session
  /// may pin a new peer, and the file itself is locked while it is updated).
  security::Result<security::KnownPeers> known_peers() const { return security::KnownPeers::load_in(dir); }
};

/// The exit code for a failed Session::establish.
int exit_code_for(security::Errc code);

}  // namespace braid::transfer
