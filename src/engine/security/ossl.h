// RAII ownership of OpenSSL objects, and turning OpenSSL's error queue into
// an Error. Internal to the security layer.
#pragma once

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <string_view>

#include "result.h"

namespace braid::security::ossl {

template <auto Free>
struct Deleter {
  template <class P>
  void operator()(P* p) const { Free(p); }
};

using PKey = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using PKeyCtx = std::unique_ptr<EVP_PKEY_CTX, Deleter<EVP_PKEY_CTX_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, Deleter<EVP_CIPHER_CTX_free>>;
using Cipher = std::unique_ptr<EVP_CIPHER, Deleter<EVP_CIPHER_free>>;
using Kdf = std::unique_ptr<EVP_KDF, Deleter<EVP_KDF_free>>;
using KdfCtx = std::unique_ptr<EVP_KDF_CTX, Deleter<EVP_KDF_CTX_free>>;
using Mac = std::unique_ptr<EVP_MAC, Deleter<EVP_MAC_free>>;
using MacCtx = std::unique_ptr<EVP_MAC_CTX, Deleter<EVP_MAC_CTX_free>>;
using SslCtx = std::unique_ptr<SSL_CTX, Deleter<SSL_CTX_free>>;
using Ssl = std::unique_ptr<SSL, Deleter<SSL_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO_free_all>>;
using EcGroup = std::unique_ptr<EC_GROUP, Deleter<EC_GROUP_free>>;
using EcPoint = std::unique_ptr<EC_POINT, Deleter<EC_POINT_clear_free>>;  // points may be secret (K)
using Bn = std::unique_ptr<BIGNUM, Deleter<BN_clear_free>>;              // wiped: scalars are secret
using BnCtx = std::unique_ptr<BN_CTX, Deleter<BN_CTX_free>>;

// Drains OpenSSL's thread-local error queue into one line ("" if empty).
std::string drain_errors();

// An Errc::crypto_error whose message is `what` plus the drained queue.
Error crypto_error(std::string_view what);

}  // namespace braid::security::ossl
