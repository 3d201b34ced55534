#include "fingerprint.h"

#include <openssl/sha.h>
#include <openssl/x509.h>

#include <vector>

#include "ossl.h"

namespace braid::security {

Result<Fingerprint> Fingerprint::of_key(const EVP_PKEY* key) {
  // i2d_PUBKEY encodes only the public half, whatever the object holds.
  int len = i2d_PUBKEY(const_cast<EVP_PKEY*>(key), nullptr);
  if (len <= 0) return ossl::crypto_error("cannot encode public key");
  std::vector<unsigned char> der(static_cast<std::size_t>(len));
  unsigned char* p = der.data();
  if (i2d_PUBKEY(const_cast<EVP_PKEY*>(key), &p) != len) return ossl::crypto_error("cannot encode public key");
  std::array<std::uint8_t, kSize> digest{};
  SHA256(der.data(), der.size(), digest.data());
  return Fingerprint(digest);
}

std::string Fingerprint::to_string() const {
  unsigned char b64[48];  // 4 * ceil(32 / 3) = 44, plus NUL
  int n = EVP_EncodeBlock(b64, bytes_.data(), static_cast<int>(kSize));
  std::string out(kPrefix);
  out.append(reinterpret_cast<const char*>(b64), static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  return out;
}

Result<Fingerprint> Fingerprint::parse(std::string_view text) {
  auto bad = [&] {
    return make_error(Errc::bad_file_format, "not a braid fingerprint: '" + std::string(text) + "'");
  };
  if (text.substr(0, kPrefix.size()) != kPrefix) return bad();
  std::string body(text.substr(kPrefix.size()));
  if (body.size() != 43) return bad();
  for (char c : body) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!ok) return bad();
  }
  body += '=';
  unsigned char raw[33];
  // EVP_DecodeBlock returns 33 for 44 input characters; the padding byte is 0.
  if (EVP_DecodeBlock(raw, reinterpret_cast<const unsigned char*>(body.data()), 44) != 33) return bad();
  std::array<std::uint8_t, kSize> bytes{};
  std::copy(raw, raw + kSize, bytes.begin());
  Fingerprint fp(bytes);
  if (fp.to_string() != text) return bad();  // rejects non-canonical trailing bits
  return fp;
}

}  // namespace braid::security
