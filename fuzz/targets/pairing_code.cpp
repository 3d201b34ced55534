// The pairing code as typed by a person or given by a script:
// security::PairingCode::parse and transfer::pairing_code_from_text. Input:
// the text. Properties:
//   - a parsed code is either a words code (4 digits and 4 list words, its
//     rendezvous the digits) or 24 symbols of the legacy alphabet; parsing
//     its canonical and its display form gives the same code; a legacy
//     display form is six groups of four;
//   - a refusal is bad_pairing_code or pairing_code_mistyped;
//   - pairing_code_from_text gives a code for any non-empty text that is not
//     shaped like a words code (a valid one: sender and receiver derive it
//     alike), the parsed code itself when the text is one, refuses text
//     shaped like a words code that does not parse, and flags "mistyped"
//     exactly when parse did.
#include <algorithm>
#include <string>

#include "engine/security/pairing_code.h"
#include "engine/transfer/code_text.hpp"
#include "fuzz_support.hpp"

using namespace braid;
using security::PairingCode;

namespace {

void valid(const PairingCode& c) {
  const std::string& s = c.canonical();
  const std::string shown = c.display();
  if (c.kind() == PairingCode::Kind::words) {
    FUZZ_CHECK(shown == s);
    FUZZ_CHECK(c.rendezvous() && *c.rendezvous() == s.substr(0, PairingCode::kRendezvousDigits));
    FUZZ_CHECK(c.secret_bits() == PairingCode::kSecretBits);
    size_t words = 0;
    for (size_t at = PairingCode::kRendezvousDigits; at < s.size();) {
      FUZZ_CHECK(s[at] == '-');
      const size_t end = std::min(s.find('-', at + 1), s.size());
      const std::string word = s.substr(at + 1, end - at - 1);
      FUZZ_CHECK(security::find_code_word(word) && security::kCodeWords[*security::find_code_word(word)] == word);
      ++words;
      at = end;
    }
    FUZZ_CHECK(words == PairingCode::kWords);
  } else {
    FUZZ_CHECK(!c.rendezvous());
    FUZZ_CHECK(s.size() == PairingCode::kLegacySymbols);
    for (char ch : s) FUZZ_CHECK(PairingCode::kLegacyAlphabet.find(ch) != std::string_view::npos);
    FUZZ_CHECK(shown.size() == PairingCode::kLegacySymbols + 5);
    for (size_t i = 0; i < shown.size(); ++i) FUZZ_CHECK((shown[i] == '-') == (i % 5 == 4));
  }
  auto a = PairingCode::parse(s);
  auto b = PairingCode::parse(shown);
  FUZZ_CHECK(a.ok() && b.ok() && a.value().canonical() == s && b.value().canonical() == s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = PairingCode::parse(text);
  if (parsed) {
    valid(parsed.value());
  } else {
    FUZZ_CHECK(parsed.error().code == security::Errc::bad_pairing_code ||
               parsed.error().code == security::Errc::pairing_code_mistyped);
  }

  const auto from = transfer::pairing_code_from_text(text);
  if (text.empty()) {
    FUZZ_CHECK(!from.code && !from.error.empty());
    return 0;
  }
  if (!parsed && PairingCode::looks_like_words_code(text)) {
    FUZZ_CHECK(!from.code && !from.error.empty());
    return 0;
  }
  FUZZ_CHECK(from.code.has_value() && from.error.empty());
  valid(*from.code);
  FUZZ_CHECK(from.looked_mistyped == (!parsed && parsed.error().code == security::Errc::pairing_code_mistyped));
  if (parsed) FUZZ_CHECK(from.code->canonical() == parsed.value().canonical());
  return 0;
}
