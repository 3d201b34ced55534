// Pairing codes as people and scripts give them. A real code — the words
// format or the older 24-symbol format (security/pairing_code.h) — is used
// as is. Text with the shape of a words code (a 4-digit number, then
// letters) is read as one or refused with the reason (an unknown word, with
// a suggestion): a typo must not silently become another code. Any other
// text — a script's `--code "$(openssl rand -hex 16)"` — is turned into a
// code deterministically (SHA-256 of the text, cut to 23 legacy symbols,
// plus the matching check symbol), so sender and receiver given the same
// text agree. Its strength is then the text's: the command line refuses
// weak text (security/code_strength.h); this layer does not judge.
#pragma once

#include <optional>
#include <string>

#include "engine/security/pairing_code.h"

namespace braid::transfer {

struct CodeFromText {
  std::optional<security::PairingCode> code;
  // The text has a code's shape but not a valid code's content: a word not
  // in the list (then `code` is empty and `error` says which), or a legacy
  // code's check symbol that does not match (then `code` is the text's hash).
  bool looked_mistyped = false;
  std::string error;
};

CodeFromText pairing_code_from_text(const std::string& text);

}  // namespace braid::transfer
