// Whether a pairing code a person chose (`--code`, BRAID_CODE, --code-file)
// is strong enough to offer. Pure: no I/O.
//
// Pairing runs SPAKE2, so a guesser gets one online guess per attempt and a
// receiver allows 3 attempts per code (docs/security.md): a code needs
// kMinCodeBits of secret for P(guessed) <= 3 / 2^40 per code.
//
// Accepted:
//   - a code in braid's format (pairing_code.h): a number and four list
//     words (44 bits when the words are drawn at random, as braid draws
//     them: choosing them by hand is the user's business), or the older
//     24-symbol format (115 bits);
//   - any other text whose estimated entropy is at least kMinCodeBits.
// The estimate is deliberately conservative, after NIST SP 800-63-1
// Appendix A (entropy of user-chosen passwords): the first character 4
// bits, the 2nd to 8th 2 bits each, the 9th to 20th 1.5 bits each, every
// one after that 1 bit; 6 more bits if the text has both an upper-case
// letter and a character that is not a letter. Before counting, braid drops
// what a guesser tries first: a text that is one part repeated counts as
// that part once, and a run of three or more equal or consecutive
// characters ("aaaa", "1234", "dcba") counts as its first two. So 24
// characters of random-looking text pass, 20 with upper case and digits
// pass, `openssl rand -hex 16` (32) passes, a word or a name does not.
#pragma once

#include <string_view>

#include "result.h"

namespace braid::security {

inline constexpr double kMinCodeBits = 40.0;

// The estimate above, in bits, for any text.
double estimate_text_bits(std::string_view text);

// Ok, or Errc::weak_pairing_code with one line that says why and what to do.
// Text with the shape of a braid code that does not parse is refused with
// the parser's reason (an unknown word, with a suggestion).
Status check_chosen_code(std::string_view text);

}  // namespace braid::security
