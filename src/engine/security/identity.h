// This host's long-term identity: an Ed25519 key pair and a self-signed X.509
// certificate for it (TLS needs a certificate; nobody checks its issuer —
// peers pin the key's fingerprint instead).
//
// Files, in the config directory (default: $XDG_CONFIG_HOME/braid/):
//   identity.key  PKCS#8 PEM private key, mode 0600, never overwritten
//   identity.crt  PEM certificate, CN = the host's name; rebuilt from the key
//                 if it is missing or does not match
// The directory is kept at mode 0700.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "fingerprint.h"
#include "ossl.h"
#include "result.h"

namespace braid::security {

class Identity {
 public:
  static constexpr std::string_view kKeyFile = "identity.key";
  static constexpr std::string_view kCertFile = "identity.crt";

  // Loads the identity in `dir`, creating the directory, key and certificate
  // on first use. `name_if_new` names a new certificate (default: hostname);
  // it must pass is_valid_peer_name. Safe against a second braid process
  // creating the same identity at the same moment: one key wins, both use it.
  static Result<Identity> load_or_create(const std::filesystem::path& dir, std::string_view name_if_new = {});

  // load_or_create(default_config_dir()).
  static Result<Identity> load_or_create_default();

  const std::string& name() const { return name_; }
  const Fingerprint& fingerprint() const { return fingerprint_; }
  const std::filesystem::path& dir() const { return dir_; }
  EVP_PKEY* key() const { return key_.get(); }            // owned by this Identity
  X509* certificate() const { return cert_.get(); }       // owned by this Identity

 private:
  Identity() = default;
  std::filesystem::path dir_;
  std::string name_;
  Fingerprint fingerprint_;
  ossl::PKey key_;
  ossl::X509Ptr cert_;
};

}  // namespace braid::security

namespace braid::security {

// The host name a certificate declares (its single CN), if it is a valid
// peer name; Errc::bad_peer_certificate otherwise.
Result<std::string> certificate_peer_name(const X509* cert);

}  // namespace braid::security
