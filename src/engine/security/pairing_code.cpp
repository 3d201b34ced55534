#include "pairing_code.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <array>
#include <vector>

namespace braid::security {
namespace {

bool is_separator(char c) {
  return c == ' ' || c == '\t' || c == '-' || c == '_' || c == '.' || c == '\n' || c == '\r';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// The parts of a typed code: runs of characters between separators, with a
// digit-to-letter change also splitting ("4821chalk" is "4821", "chalk").
std::vector<std::string> parts_of(std::string_view typed) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : typed) {
    if (is_separator(c)) {
      if (!cur.empty()) parts.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    if (!cur.empty() && is_digit(cur.back()) && is_letter(c)) {
      parts.push_back(std::move(cur));
      cur.clear();
    }
    cur += lower(c);
  }
  if (!cur.empty()) parts.push_back(std::move(cur));
  return parts;
}

bool all_of(const std::string& s, bool (*pred)(char)) {
  for (char c : s)
    if (!pred(c)) return false;
  return !s.empty();
}

void wipe(std::vector<std::string>& parts) {
  for (auto& p : parts) OPENSSL_cleanse(p.data(), p.size());
}

char check_symbol(std::string_view random_part) {
  // Any typo in the random part changes the check symbol with probability 31/32.
  std::string input = "braid pairing code check v1:";
  input.append(random_part);
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  OPENSSL_cleanse(input.data(), input.size());
  return PairingCode::kLegacyAlphabet[digest[0] & 31];
}

// Crockford decoding of one typed character: the canonical symbol, or 0.
char normalize(char c) {
  if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  if (c == 'I' || c == 'L') return '1';
  if (c == 'O') return '0';
  return PairingCode::kLegacyAlphabet.find(c) == std::string_view::npos ? '\0' : c;
}

std::string example() { return "like 4821-chalk-lagoon-tiara-wharf"; }

}  // namespace

PairingCode::~PairingCode() { OPENSSL_cleanse(canonical_.data(), canonical_.size()); }

Result<PairingCode> PairingCode::generate() {
  // 2 bytes for the number (rejection sampling keeps it uniform over
  // 0000-9999), 6 bytes = 48 bits of which 44 pick the words.
  std::array<unsigned char, 8> rnd{};
  unsigned number = 0;
  do {
    if (RAND_bytes(rnd.data(), static_cast<int>(rnd.size())) != 1)
      return make_error(Errc::crypto_error, "RAND_bytes failed: no pairing code can be made");
    number = static_cast<unsigned>(rnd[0]) << 8 | rnd[1];
  } while (number >= 60000);
  number %= 10000;
  std::uint64_t bits = 0;
  for (std::size_t i = 2; i < rnd.size(); ++i) bits = bits << 8 | rnd[i];
  OPENSSL_cleanse(rnd.data(), rnd.size());

  std::string code(kRendezvousDigits, '0');
  for (std::size_t i = kRendezvousDigits; i-- > 0; number /= 10) code[i] = static_cast<char>('0' + number % 10);
  for (std::size_t w = 0; w < kWords; ++w) {
    code += '-';
    code += kCodeWords[bits & (kCodeWordCount - 1)];  // 2048 is a power of two: uniform
    bits >>= kCodeWordBits;
  }
  bits = 0;
  return PairingCode(Kind::words, std::move(code));
}

bool PairingCode::looks_like_words_code(std::string_view typed) {
  std::vector<std::string> parts = parts_of(typed);
  bool words = parts.size() >= 2 && parts[0].size() == kRendezvousDigits && all_of(parts[0], is_digit);
  for (std::size_t i = 1; words && i < parts.size(); ++i) words = all_of(parts[i], is_letter);
  wipe(parts);
  return words;
}

Result<PairingCode> PairingCode::parse(std::string_view typed) {
  if (!looks_like_words_code(typed)) return parse_legacy(typed);
  std::vector<std::string> parts = parts_of(typed);
  struct Wipe {
    std::vector<std::string>& p;
    ~Wipe() { wipe(p); }
  } wipe_parts{parts};

  const std::size_t words = parts.size() - 1;
  if (words != kWords) {
    // Four-digit groups of a legacy code run together with letters only: rare, but valid.
    if (auto legacy = parse_legacy(typed)) return legacy;
    return make_error(Errc::bad_pairing_code, "a pairing code is a number and " + std::to_string(kWords) +
                                                  " words (" + example() + "); this has " + std::to_string(words) +
                                                  (words == 1 ? " word" : " words"));
  }
  std::string code = parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& typed_word = parts[i];
    auto index = find_code_word(typed_word);
    if (!index) {
      // Not read as the older format, though a number and four words can
      // come to its 24 symbols: one in 32 of those checks by chance, and a
      // typo then went out as an older code and cost an attempt. That
      // format is shown in six groups, never a number and four words.
      std::string msg = "unknown word '" + typed_word + "' in the pairing code";
      if (const auto near = nearest_code_words(typed_word); !near.empty()) {
        msg += " (did you mean ";
        for (std::size_t k = 0; k < near.size(); ++k)
          msg += (k == 0 ? "'" : k + 1 == near.size() ? " or '" : ", '") + std::string(near[k]) + "'";
        msg += "?)";
      } else if (typed_word.size() < kCodeWordPrefix) msg += " (type whole words, or at least their first 4 letters)";
      else msg += "; check the code the receiver shows";
      OPENSSL_cleanse(code.data(), code.size());
      return make_error(Errc::pairing_code_mistyped, msg);
    }
    code += '-';
    code += kCodeWords[*index];
  }
  return PairingCode(Kind::words, std::move(code));
}

Result<PairingCode> PairingCode::parse_legacy(std::string_view typed) {
  std::string code;
  for (char c : typed) {
    if (is_separator(c)) continue;
    char n = normalize(c);
    if (n == '\0') {
      OPENSSL_cleanse(code.data(), code.size());
      std::string shown = (static_cast<unsigned char>(c) >= 0x21 && static_cast<unsigned char>(c) < 0x7f)
                              ? std::string("'") + c + "'"
                              : "a non-printable character";
      return make_error(Errc::bad_pairing_code, "the pairing code contains " + shown + "; a code is a number and " +
                                                    std::to_string(kWords) + " words (" + example() + ")");
    }
    code += n;
  }
  if (code.size() != kLegacySymbols) {
    OPENSSL_cleanse(code.data(), code.size());
    return make_error(Errc::bad_pairing_code,
                      "not a pairing code: a code is a number and " + std::to_string(kWords) + " words (" + example() +
                          "), or 24 letters and digits in six groups of four (the older format)");
  }
  if (check_symbol(std::string_view(code).substr(0, kLegacyRandomSymbols)) != code.back()) {
    OPENSSL_cleanse(code.data(), code.size());
    return make_error(Errc::pairing_code_mistyped,
                      "the pairing code looks mistyped (its check symbol does not match); read it again");
  }
  return PairingCode(Kind::legacy, std::move(code));
}

std::string PairingCode::display() const {
  if (kind_ == Kind::words) return canonical_;
  std::string out;
  for (std::size_t i = 0; i < canonical_.size(); ++i) {
    if (i > 0 && i % 4 == 0) out += '-';
    out += canonical_[i];
  }
  return out;
}

std::optional<std::string> PairingCode::rendezvous() const {
  if (kind_ != Kind::words) return std::nullopt;
  return canonical_.substr(0, kRendezvousDigits);
}

}  // namespace braid::security
