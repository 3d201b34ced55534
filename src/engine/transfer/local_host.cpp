#include "engine/transfer/local_host.hpp"

#include "engine/security/files.h"
#include "engine/transfer/exit_codes.hpp"

namespace braid::transfer {

std::unique_ptr<LocalHost> LocalHost::load(const std::optional<std::filesystem::path>& dir, std::string& error) {
  auto host = std::make_unique<LocalHost>();
  if (dir) {
    host->dir = *dir;
  } else {
    auto d = security::default_config_dir();
    if (!d) {
      error = d.error().message;
      return nullptr;
    }
    host->dir = d.value();
  }
  auto id = security::Identity::load_or_create(host->dir);
  if (!id) {
    error = id.error().message;
    return nullptr;
  }
  host->identity.emplace(std::move(id.value()));
  auto tls = security::TlsContext::create(*host->identity);
  if (!tls) {
    error = tls.error().message;
    return nullptr;
  }
  host->tls.emplace(std::move(tls.value()));
  return host;
}

int exit_code_for(security::Errc code) {
  switch (code) {
    case security::Errc::pairing_failed:
    case security::Errc::pairing_required:
    case security::Errc::bad_pairing_code:
    case security::Errc::pairing_code_mistyped:
      return kExitAuthFailed;
    case security::Errc::peer_key_changed:
    case security::Errc::peer_refused_us:
      return kExitKeyChanged;
    case security::Errc::timed_out:
    case security::Errc::connection_closed:
    case security::Errc::not_braid:
      return kExitUnreachable;
    default:
      return kExitFailure;
  }
}

}  // namespace braid::transfer
