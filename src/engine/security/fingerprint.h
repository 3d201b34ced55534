// A host's fingerprint: SHA-256 of its public key (DER SubjectPublicKeyInfo),
// printed like OpenSSH does: "SHA256:" + unpadded base64 (43 characters).
#pragma once

#include <openssl/evp.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "result.h"

namespace braid::security {

class Fingerprint {
 public:
  static constexpr std::size_t kSize = 32;
  static constexpr std::string_view kPrefix = "SHA256:";

  Fingerprint() { bytes_.fill(0); }
  explicit Fingerprint(const std::array<std::uint8_t, kSize>& bytes) : bytes_(bytes) {}

  // Fingerprint of any public (or private) key OpenSSL holds.
  static Result<Fingerprint> of_key(const EVP_PKEY* key);
  // Parses the printed form; anything else is Errc::bad_file_format.
  static Result<Fingerprint> parse(std::string_view text);

  std::string to_string() const;
  const std::array<std::uint8_t, kSize>& bytes() const { return bytes_; }

  friend bool operator==(const Fingerprint&, const Fingerprint&) = default;

 private:
  std::array<std::uint8_t, kSize> bytes_;
};

}  // namespace braid::security
