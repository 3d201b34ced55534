#include "identity.h"

#include <openssl/pem.h>
#include <openssl/rand.h>

#include "files.h"
#include "peer_name.h"

namespace braid::security {
namespace fs = std::filesystem;

namespace {

std::string bio_contents(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(len));
}

Result<ossl::PKey> generate_key() {
  ossl::PKey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (!key) return ossl::crypto_error("cannot generate an Ed25519 key");
  return key;
}

Result<std::string> key_to_pem(EVP_PKEY* key) {
  ossl::Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return ossl::crypto_error("cannot encode the private key");
  return bio_contents(bio.get());
}

Result<ossl::PKey> key_from_pem(const std::string& pem, const fs::path& path) {
  ossl::Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  ossl::PKey key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  ossl::drain_errors();
  if (!key || EVP_PKEY_get_id(key.get()) != EVP_PKEY_ED25519)
    return make_error(Errc::bad_file_format, in_quotes(path.string()) + " is not an Ed25519 private key in PEM form");
  return key;
}

// A self-signed v3 certificate. Its validity is long because nobody checks
// it: trust comes from the pinned fingerprint, not from dates or issuers.
Result<ossl::X509Ptr> make_certificate(EVP_PKEY* key, const std::string& name) {
  ossl::X509Ptr cert(X509_new());
  if (!cert) return ossl::crypto_error("cannot allocate a certificate");
  unsigned char serial[8];
  if (RAND_bytes(serial, sizeof serial) != 1) return ossl::crypto_error("RAND_bytes failed");
  serial[0] &= 0x7f;  // a positive INTEGER
  std::uint64_t s = 0;
  for (unsigned char b : serial) s = (s << 8) | b;
  X509_NAME* subject = X509_get_subject_name(cert.get());
  bool ok = X509_set_version(cert.get(), X509_VERSION_3) == 1 &&
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert.get()), s) == 1 &&
            X509_gmtime_adj(X509_getm_notBefore(cert.get()), -24L * 3600) != nullptr &&
            X509_time_adj_ex(X509_getm_notAfter(cert.get()), 100 * 365, 0, nullptr) != nullptr &&
            X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("braid"), -1, -1, 0) == 1 &&
            X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0) == 1 &&
            X509_set_issuer_name(cert.get(), subject) == 1 && X509_set_pubkey(cert.get(), key) == 1 &&
            X509_sign(cert.get(), key, nullptr) > 0;  // Ed25519 signs without a separate digest
  if (!ok) return ossl::crypto_error("cannot build the self-signed certificate");
  return cert;
}

Result<std::string> cert_to_pem(X509* cert) {
  ossl::Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return ossl::crypto_error("cannot encode the certificate");
  return bio_contents(bio.get());
}

// The certificate on disk, if it exists, parses, and belongs to `key`.
ossl::X509Ptr load_matching_cert(const fs::path& path, EVP_PKEY* key) {
  auto text = read_small_file(path, false);
  if (!text || !text.value()) return nullptr;
  const std::string& pem = *text.value();
  ossl::Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  ossl::X509Ptr cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  bool usable = cert && X509_check_private_key(cert.get(), key) == 1 && certificate_peer_name(cert.get()).ok();
  ossl::drain_errors();
  return usable ? std::move(cert) : nullptr;
}

}  // namespace

Result<std::string> certificate_peer_name(const X509* cert) {
  const X509_NAME* subject = X509_get_subject_name(cert);
  int idx = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (idx < 0 || X509_NAME_get_index_by_NID(subject, NID_commonName, idx) >= 0)
    return make_error(Errc::bad_peer_certificate, "the peer's certificate does not carry exactly one name (CN)");
  const ASN1_STRING* cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, idx));
  std::string name(reinterpret_cast<const char*>(ASN1_STRING_get0_data(cn)), static_cast<std::size_t>(ASN1_STRING_length(cn)));
  if (!is_valid_peer_name(name))
    return make_error(Errc::bad_peer_certificate,
                      "the peer's certificate name is not a valid braid peer name (1-64 of A-Z a-z 0-9 . _ @ : + -)");
  return name;
}

Result<Identity> Identity::load_or_create(const fs::path& dir, std::string_view name_if_new) {
  std::string new_name = name_if_new.empty() ? default_peer_name() : std::string(name_if_new);
  if (!is_valid_peer_name(new_name))
    return make_error(Errc::invalid_argument, in_quotes(new_name) + " is not a valid braid host name");
  if (Status s = ensure_private_dir(dir); !s) return s.error();

  const fs::path key_path = dir / kKeyFile;
  const fs::path cert_path = dir / kCertFile;

  auto existing = read_small_file(key_path, true);
  if (!existing) return existing.error();
  if (!existing.value()) {
    auto key = generate_key();
    if (!key) return key.error();
    auto pem = key_to_pem(key.value().get());
    if (!pem) return pem.error();
    auto created = create_file_exclusive(key_path, pem.value(), 0600);
    if (!created) return created.error();
    // Whether we or a concurrent braid won, the file on disk is the identity.
    existing = read_small_file(key_path, true);
    if (!existing) return existing.error();
    if (!existing.value()) return make_error(Errc::io_error, in_quotes(key_path.string()) + " vanished while being created");
  }

  auto key = key_from_pem(*existing.value(), key_path);
  if (!key) return key.error();

  Identity id;
  id.dir_ = dir;
  id.key_ = std::move(key.value());
  id.cert_ = load_matching_cert(cert_path, id.key_.get());
  if (!id.cert_) {
    auto cert = make_certificate(id.key_.get(), new_name);
    if (!cert) return cert.error();
    auto pem = cert_to_pem(cert.value().get());
    if (!pem) return pem.error();
    if (Status s = replace_file(cert_path, pem.value(), 0644); !s) return s.error();
    id.cert_ = std::move(cert.value());
  }
  auto name = certificate_peer_name(id.cert_.get());
  if (!name) return name.error();
  id.name_ = std::move(name.value());
  auto fp = Fingerprint::of_key(id.key_.get());
  if (!fp) return fp.error();
  id.fingerprint_ = fp.value();
  return id;
}

Result<Identity> Identity::load_or_create_default() {
  auto dir = default_config_dir();
  if (!dir) return dir.error();
  return load_or_create(dir.value());
}

}  // namespace braid::security
