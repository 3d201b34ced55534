#include "engine/transfer/code_text.hpp"

#include <openssl/sha.h>

namespace braid::transfer {

CodeFromText pairing_code_from_text(const std::string& text) {
  CodeFromText out;
  auto parsed = security::PairingCode::parse(text);
  if (parsed) {
    out.code.emplace(parsed.value());
    return out;
  }
  out.looked_mistyped = parsed.error().code == security::Errc::pairing_code_mistyped;
  if (security::PairingCode::looks_like_words_code(text)) {
    out.error = parsed.error().message;
    return out;
  }
  if (text.empty()) {
    out.error = "the pairing code is empty";
    return out;
  }
  const std::string salted = "braid code text v1:" + text;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(salted.data()), salted.size(), digest);
  std::string symbols;
  for (size_t i = 0; i < security::PairingCode::kLegacyRandomSymbols; ++i) {
    const size_t bit = i * 5;
    const unsigned v = ((digest[bit / 8] << 8 | digest[bit / 8 + 1]) >> (11 - bit % 8)) & 31u;
    symbols += security::PairingCode::kLegacyAlphabet[v];
  }
  // The check symbol's rule belongs to the security module: find the one it accepts.
  for (char c : security::PairingCode::kLegacyAlphabet) {
    if (auto code = security::PairingCode::parse(symbols + c); code) {
      out.code.emplace(code.value());
      return out;
    }
  }
  out.error = "cannot turn '" + text + "' into a pairing code";
  return out;
}

}  // namespace braid::transfer
