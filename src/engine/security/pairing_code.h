// The one-time pairing code the receiver prints and the sender types.
//
// 24 symbols of Crockford base32 (0-9 and A-Z without I, L, O, U), shown as
// six groups of four: "7KQ2-M9XD-...". 23 symbols are random (115 bits from
// OpenSSL's RAND_bytes; pairing runs SPAKE2, so only online guesses count,
// 3 per code: docs/security.md); the last is a check symbol, so a typo is
// reported at once instead of as a failed pairing.
//
// Parsing forgives what people do: lower case, any of " -_." as separators
// (or none), and I/L typed for 1, O typed for 0.
#pragma once

#include <string>
#include <string_view>

#include "result.h"

namespace braid::security {

class PairingCode {
 public:
  static constexpr std::size_t kRandomSymbols = 23;
  static constexpr std::size_t kSymbols = kRandomSymbols + 1;
  static constexpr std::size_t kEntropyBits = kRandomSymbols * 5;
  static constexpr std::string_view kAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

  static Result<PairingCode> generate();
  // Errc::bad_pairing_code (wrong length or letter) or
  // Errc::pairing_code_mistyped (check symbol does not match).
  static Result<PairingCode> parse(std::string_view typed);

  PairingCode(const PairingCode&) = default;
  PairingCode& operator=(const PairingCode&) = default;
  ~PairingCode();

  // The 24 symbols, upper case, no separators: what the key is derived from.
  const std::string& canonical() const { return canonical_; }
  // "XXXX-XXXX-XXXX-XXXX-XXXX-XXXX", for printing.
  std::string display() const;

 private:
  explicit PairingCode(std::string canonical) : canonical_(std::move(canonical)) {}
  std::string canonical_;
};

}  // namespace braid::security
