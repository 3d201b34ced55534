// The pairing code as typed by a person or given by a script:
// security::PairingCode::parse and transfer::pairing_code_from_text. Input:
// the text. Properties:
//   - a parsed code is 24 symbols of the alphabet; parsing its canonical and
//     its display form gives the same code; the display form is six groups
//     of four;
//   - a refusal is bad_pairing_code or pairing_code_mistyped;
//   - pairing_code_from_text gives a code for any non-empty text (a valid
//     one: sender and receiver derive it alike), the parsed code itself when
//     the text is one, and flags "mistyped" exactly when parse did.
#include <string>

#include "engine/security/pairing_code.h"
#include "engine/transfer/code_text.hpp"
#include "fuzz_support.hpp"

using namespace braid;
using security::PairingCode;

namespace {

void valid(const PairingCode& c) {
  const std::string& s = c.canonical();
  FUZZ_CHECK(s.size() == PairingCode::kSymbols);
  for (char ch : s) FUZZ_CHECK(PairingCode::kAlphabet.find(ch) != std::string_view::npos);
  const std::string shown = c.display();
  FUZZ_CHECK(shown.size() == PairingCode::kSymbols + 5);
  for (size_t i = 0; i < shown.size(); ++i) FUZZ_CHECK((shown[i] == '-') == (i % 5 == 4));
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
  FUZZ_CHECK(from.code.has_value() && from.error.empty());
  valid(*from.code);
  FUZZ_CHECK(from.looked_mistyped == (!parsed && parsed.error().code == security::Errc::pairing_code_mistyped));
  if (parsed) FUZZ_CHECK(from.code->canonical() == parsed.value().canonical());
  return 0;
}
