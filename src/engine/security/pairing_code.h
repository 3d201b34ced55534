// The one-time pairing code the receiver prints and the sender types.
//
// Format: a 4-digit number and four words, "4821-chalk-lagoon-tiara-wharf".
//   - The number is PUBLIC: the receiver announces it on the local network
//     so `braid send FILE CODE` finds the receiver whose announcement
//     carries it (rendezvous()). It is random but counts for nothing in the
//     code's strength.
//   - The words are the secret: 4 words from a list of 2048 (word_list.h),
//     from OpenSSL's RAND_bytes, so kSecretBits = 44 bits.
//   - The whole canonical text, number included, is the SPAKE2 password
//     (spake2.h). Pairing runs SPAKE2 inside TLS 1.3, so an attacker gets
//     one online guess per attempt and nothing to test offline; a receiver
//     allows 3 attempts per code (code_ledger.h): docs/security.md.
//
// Parsing forgives what people do: any case; '-', '.', '_', spaces or tabs
// between the parts (one or more, or none between the number and the first
// word); a word typed as a unique prefix of at least four letters. A word
// that is not in the list is named, with the nearest list word if there is
// one: "unknown word 'tiaar' (did you mean 'tiara'?)".
//
// The older format — 24 symbols of Crockford base32 in six groups,
// "57CA-1J52-KQAJ-B9PZ-3NAY-9ZAG", 115 random bits and a check symbol — is
// still parsed (kind() == legacy), so codes from scripts and older
// receivers keep working; braid no longer generates it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "result.h"
#include "word_list.h"

namespace braid::security {

class PairingCode {
 public:
  enum class Kind : std::uint8_t { words, legacy };

  static constexpr std::size_t kRendezvousDigits = 4;
  static constexpr std::size_t kWords = 4;
  static constexpr std::size_t kSecretBits = kWords * kCodeWordBits;  // 44

  // The older Crockford format.
  static constexpr std::size_t kLegacyRandomSymbols = 23;
  static constexpr std::size_t kLegacySymbols = kLegacyRandomSymbols + 1;
  static constexpr std::size_t kLegacySecretBits = kLegacyRandomSymbols * 5;  // 115
  static constexpr std::string_view kLegacyAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

  // A fresh words code (Errc::crypto_error if RAND_bytes fails).
  static Result<PairingCode> generate();
  // Either format. Errc::pairing_code_mistyped: the shape of a code with a
  // word not in the list, or a legacy code whose check symbol does not
  // match; Errc::bad_pairing_code: anything else that is not a code.
  static Result<PairingCode> parse(std::string_view typed);
  // True if `typed` is meant as a words code: a 4-digit number, then only
  // letters and separators. Such text is read as a code or refused, never
  // taken as free text (engine/transfer/code_text.hpp).
  static bool looks_like_words_code(std::string_view typed);

  PairingCode(const PairingCode&) = default;
  PairingCode& operator=(const PairingCode&) = default;
  ~PairingCode();

  Kind kind() const { return kind_; }
  // What the SPAKE2 password is: "4821-chalk-lagoon-tiara-wharf" (lower
  // case, '-' between parts), or the 24 legacy symbols upper case.
  const std::string& canonical() const { return canonical_; }
  // For printing: the canonical words code, or the legacy code in groups of four.
  std::string display() const;
  // The public number ("0042"): a words code's first part; nullopt for a legacy code.
  std::optional<std::string> rendezvous() const;
  // Random bits a guesser must find: kSecretBits or kLegacySecretBits.
  std::size_t secret_bits() const { return kind_ == Kind::words ? kSecretBits : kLegacySecretBits; }

 private:
  PairingCode(Kind kind, std::string canonical) : kind_(kind), canonical_(std::move(canonical)) {}
  static Result<PairingCode> parse_legacy(std::string_view typed);

  Kind kind_;
  std::string canonical_;
};

}  // namespace braid::security
