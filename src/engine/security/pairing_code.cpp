#include "pairing_code.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <array>

namespace braid::security {
namespace {

char check_symbol(std::string_view random_part) {
  // Any typo in the random part changes the check symbol with probability 31/32.
  std::string input = "braid pairing code check v1:";
  input.append(random_part);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  OPENSSL_cleanse(input.data(), input.size());
  return PairingCode::kAlphabet[digest[0] & 31];
}

// Crockford decoding of one typed character: the canonical symbol, or 0.
char normalize(char c) {
  if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  if (c == 'I' || c == 'L') return '1';
  if (c == 'O') return '0';
  return PairingCode::kAlphabet.find(c) == std::string_view::npos ? '\0' : c;
}

}  // namespace

PairingCode::~PairingCode() { OPENSSL_cleanse(canonical_.data(), canonical_.size()); }

Result<PairingCode> PairingCode::generate() {
  std::array<unsigned char, kRandomSymbols> rnd{};
  if (RAND_bytes(rnd.data(), static_cast<int>(rnd.size())) != 1)
    return make_error(Errc::crypto_error, "RAND_bytes failed: no pairing code can be made");
  std::string code;
  // 256 is a multiple of 32, so masking keeps each symbol uniform.
  for (unsigned char b : rnd) code += kAlphabet[b & 31];
  OPENSSL_cleanse(rnd.data(), rnd.size());
  code += check_symbol(code);
  return PairingCode(std::move(code));
}

Result<PairingCode> PairingCode::parse(std::string_view typed) {
  std::string code;
  for (char c : typed) {
    if (c == ' ' || c == '\t' || c == '-' || c == '_' || c == '.' || c == '\n' || c == '\r') continue;
    char n = normalize(c);
    if (n == '\0') {
      std::string shown = (static_cast<unsigned char>(c) >= 0x21 && static_cast<unsigned char>(c) < 0x7f)
                              ? std::string("'") + c + "'"
                              : "a non-printable character";
      return make_error(Errc::bad_pairing_code,
                        "the pairing code contains " + shown + "; a code uses only 0-9 and A-Z without U");
    }
    code += n;
  }
  if (code.size() != kSymbols)
    return make_error(Errc::bad_pairing_code, "a pairing code has " + std::to_string(kSymbols) +
                                                  " letters and digits (six groups of four); this has " +
                                                  std::to_string(code.size()));
  if (check_symbol(std::string_view(code).substr(0, kRandomSymbols)) != code.back())
    return make_error(Errc::pairing_code_mistyped,
                      "the pairing code looks mistyped (its check symbol does not match); read it again");
  return PairingCode(std::move(code));
}

std::string PairingCode::display() const {
  std::string out;
  for (std::size_t i = 0; i < canonical_.size(); ++i) {
    if (i > 0 && i % 4 == 0) out += '-';
    out += canonical_[i];
  }
  return out;
}

}  // namespace braid::security
