#include "code_strength.h"

#include <cmath>
#include <string>

#include "pairing_code.h"

namespace braid::security {
namespace {

// The text a guesser's first tries already cover, dropped: a repeated
// whole, then runs of equal or consecutive characters.
std::string effective_characters(std::string_view text) {
  std::string_view unit = text;
  for (std::size_t len = 1; len <= text.size() / 2; ++len) {
    if (text.size() % len != 0) continue;
    bool repeats = true;
    for (std::size_t i = len; repeats && i < text.size(); ++i) repeats = text[i] == text[i - len];
    if (repeats) {
      unit = text.substr(0, len);
      break;
    }
  }
  // A run of three or more equal characters, or of characters each one up
  // or down from the one before ("aaaa", "1234", "dcba"), keeps its first two.
  std::string out;
  for (std::size_t i = 0; i < unit.size(); ++i) {
    if (i >= 2) {
      const int d1 = static_cast<unsigned char>(unit[i]) - static_cast<unsigned char>(unit[i - 1]);
      const int d0 = static_cast<unsigned char>(unit[i - 1]) - static_cast<unsigned char>(unit[i - 2]);
      if (d1 == d0 && std::abs(d1) <= 1) continue;
    }
    out += unit[i];
  }
  return out;
}

}  // namespace

double estimate_text_bits(std::string_view text) {
  const std::string chars = effective_characters(text);
  double bits = 0;
  for (std::size_t i = 1; i <= chars.size(); ++i) bits += i == 1 ? 4.0 : i <= 8 ? 2.0 : i <= 20 ? 1.5 : 1.0;
  bool upper = false, non_letter = false;
  for (char c : text) {
    upper = upper || (c >= 'A' && c <= 'Z');
    non_letter = non_letter || !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'));
  }
  if (upper && non_letter) bits += 6.0;
  return bits;
}

Status check_chosen_code(std::string_view text) {
  auto parsed = PairingCode::parse(text);
  if (parsed) return {};
  if (PairingCode::looks_like_words_code(text)) return parsed.error();
  const double bits = estimate_text_bits(text);
  if (bits >= kMinCodeBits) return {};
  return make_error(Errc::weak_pairing_code,
                    "the pairing code given is too easy to guess (about " + std::to_string(static_cast<int>(bits)) +
                        " bits by braid's estimate; " + std::to_string(static_cast<int>(kMinCodeBits)) +
                        " needed): leave it out and braid makes one, or use 24 or more random characters");
}

}  // namespace braid::security
