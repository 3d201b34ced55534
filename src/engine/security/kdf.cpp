#include "kdf.h"

#include <openssl/core_names.h>
#include <openssl/kdf.h>

#include "ossl.h"

namespace braid::security {

Status hkdf_sha256(std::span<const std::uint8_t> ikm, std::span<const std::uint8_t> salt,
                   std::span<const std::uint8_t> info, std::span<std::uint8_t> out) {
  ossl::Kdf kdf(EVP_KDF_fetch(nullptr, "HKDF", nullptr));
  ossl::KdfCtx ctx(kdf ? EVP_KDF_CTX_new(kdf.get()) : nullptr);
  if (!ctx) return ossl::crypto_error("HKDF is not available");
  char digest[] = "SHA256";
  // OSSL_PARAM wants non-const pointers but does not write through them here.
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<std::uint8_t*>(ikm.data()), ikm.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, const_cast<std::uint8_t*>(salt.data()), salt.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<std::uint8_t*>(info.data()), info.size()),
      OSSL_PARAM_construct_end(),
  };
  if (EVP_KDF_derive(ctx.get(), out.data(), out.size(), params) != 1) return ossl::crypto_error("HKDF failed");
  return {};
}

Status hmac_sha256(std::span<const std::uint8_t> key, std::span<const std::uint8_t> message,
                   std::span<std::uint8_t, 32> out) {
  std::size_t len = 0;
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(), message.data(), message.size(),
                out.data(), out.size(), &len) == nullptr ||
      len != out.size())
    return ossl::crypto_error("HMAC-SHA256 failed");
  return {};
}

}  // namespace braid::security
