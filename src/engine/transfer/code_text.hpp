// Pairing codes as people and scripts give them. A real code (24 Crockford
// base32 symbols, check symbol included) is used as is. Any other text — a
// script's `--code test-1234` — is turned into a code deterministically
// (SHA-256 of the text, cut to 23 symbols, plus the matching check symbol),
// so sender and receiver given the same text agree. Its strength is then
// the text's, which is the script author's choice.
#pragma once

#include <optional>
#include <string>

#include "engine/security/pairing_code.h"

namespace braid::transfer {

struct CodeFromText {
  std::optional<security::PairingCode> code;
  bool looked_mistyped = false;  // right shape, wrong check symbol: maybe a typo
  std::string error;
};

CodeFromText pairing_code_from_text(const std::string& text);

}  // namespace braid::transfer
