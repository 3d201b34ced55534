// HKDF-SHA256 (RFC 5869) and HMAC-SHA256 through OpenSSL 3's EVP_KDF/EVP_MAC.
// Internal building blocks for lane keys and pairing proofs.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "result.h"

namespace braid::security {

Status hkdf_sha256(std::span<const std::uint8_t> ikm, std::span<const std::uint8_t> salt,
                   std::span<const std::uint8_t> info, std::span<std::uint8_t> out);

Status hmac_sha256(std::span<const std::uint8_t> key, std::span<const std::uint8_t> message,
                   std::span<std::uint8_t, 32> out);

// Bytes of a string literal or string_view, without the trailing NUL.
inline std::span<const std::uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace braid::security
