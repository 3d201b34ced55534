#include "engine/security/pairing_code.h"

#include <gtest/gtest.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <set>

namespace braid::security {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t at = 0;
  for (std::size_t end; (end = s.find(sep, at)) != std::string::npos; at = end + 1) out.push_back(s.substr(at, end - at));
  out.push_back(s.substr(at));
  return out;
}

// A code in the older 24-symbol format: 23 random symbols and the check
// symbol parse() accepts (braid no longer generates these).
Result<PairingCode> legacy_code() {
  std::array<unsigned char, PairingCode::kLegacyRandomSymbols> rnd{};
  EXPECT_EQ(RAND_bytes(rnd.data(), static_cast<int>(rnd.size())), 1);
  std::string symbols;
  for (unsigned char b : rnd) symbols += PairingCode::kLegacyAlphabet[b & 31];
  for (char c : PairingCode::kLegacyAlphabet)
    if (auto code = PairingCode::parse(symbols + c)) return code;
  return make_error(Errc::bad_pairing_code, "no check symbol fits " + symbols);
}

TEST(PairingCode, HasAtLeast40BitsOfSecretAndThePublicNumberIsNotCounted) {
  EXPECT_EQ(kCodeWords.size(), 2048u);
  EXPECT_EQ(PairingCode::kSecretBits, 44u);  // 4 words x 11 bits; the 4 digits are public
  EXPECT_GE(PairingCode::kSecretBits, 40u);
  auto code = PairingCode::generate();
  ASSERT_TRUE(code);
  EXPECT_EQ(code.value().secret_bits(), 44u);
  EXPECT_EQ(code.value().kind(), PairingCode::Kind::words);
}

TEST(PairingCode, FormatIsANumberAndFourListWords) {
  for (int i = 0; i < 200; ++i) {
    auto code = PairingCode::generate();
    ASSERT_TRUE(code);
    const std::string shown = code.value().display();
    EXPECT_EQ(shown, code.value().canonical());
    const auto parts = split(shown, '-');
    ASSERT_EQ(parts.size(), 5u) << shown;
    ASSERT_EQ(parts[0].size(), 4u) << shown;
    for (char c : parts[0]) EXPECT_TRUE(c >= '0' && c <= '9') << shown;
    for (std::size_t w = 1; w < parts.size(); ++w) {
      EXPECT_TRUE(std::binary_search(kCodeWords.begin(), kCodeWords.end(), parts[w])) << shown;
      EXPECT_GE(parts[w].size(), 3u);
      EXPECT_LE(parts[w].size(), 8u);
    }
  }
}

TEST(PairingCode, RendezvousIsTheNumberAndPublic) {
  auto code = PairingCode::generate();
  ASSERT_TRUE(code);
  const auto number = code.value().rendezvous();
  ASSERT_TRUE(number);
  EXPECT_EQ(number->size(), 4u);
  EXPECT_EQ(code.value().display().substr(0, 4), *number);
  // The same words with another number is another code (the whole text is
  // the password), but the words alone carry the secret bits.
  std::string other = code.value().canonical();
  other[0] = other[0] == '9' ? '0' : static_cast<char>(other[0] + 1);
  auto parsed = PairingCode::parse(other);
  ASSERT_TRUE(parsed);
  EXPECT_NE(parsed.value().canonical(), code.value().canonical());
  EXPECT_NE(parsed.value().rendezvous(), number);
  // A legacy code has no public number.
  auto legacy = legacy_code();
  ASSERT_TRUE(legacy);
  EXPECT_FALSE(legacy.value().rendezvous());
  EXPECT_EQ(legacy.value().secret_bits(), 115u);
}

TEST(PairingCode, NumbersAndWordsAreUniform) {
  std::set<std::string> seen;
  std::map<std::string, int> words;
  std::array<int, 10> first_digit{};
  constexpr int kCodes = 4000;   // words counted over these
  constexpr int kDigits = 20000;  // first digits over these
  for (int i = 0; i < kDigits; ++i) {
    auto code = PairingCode::generate();
    ASSERT_TRUE(code);
    const auto parts = split(code.value().canonical(), '-');
    ++first_digit[parts[0][0] - '0'];
    if (i >= kCodes) continue;
    seen.insert(code.value().canonical());
    for (std::size_t w = 1; w < parts.size(); ++w) ++words[parts[w]];
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kCodes));
  // 20000 first digits over 10 values: chi-square over 9 degrees of freedom
  // stays below 60 except with probability ~1e-9 (at 33 and 4000 digits it
  // failed one CI-like run in ~1e4: 36.4). A number taken modulo 10000
  // without the rejection (digits 0-4 a sixth likelier than 6-9) scores ~100.
  double chi2 = 0;
  const double expected = kDigits / 10.0;
  for (int c : first_digit) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 60.0);
  // 16000 words over 2048: each about 7.8 times; most of the list shows up.
  EXPECT_GT(words.size(), 1900u);
  int most = 0;
  for (const auto& [w, n] : words) most = std::max(most, n);
  EXPECT_LT(most, 30);
}

TEST(PairingCode, ParseRoundTrip) {
  auto code = PairingCode::generate();
  ASSERT_TRUE(code);
  auto parsed = PairingCode::parse(code.value().display());
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed.value().canonical(), code.value().canonical());
  EXPECT_EQ(parsed.value().kind(), PairingCode::Kind::words);
}

TEST(PairingCode, ParseForgivesCaseSpacesSeparatorsAndPrefixes) {
  const std::string canon = "4821-chalk-lagoon-tiara-wharf";
  for (const std::string typed :
       {"4821-chalk-lagoon-tiara-wharf", "4821 chalk lagoon tiara wharf", "4821.Chalk.LAGOON.tiara.wharf",
        "  4821   chalk -- lagoon\ttiara_wharf \n", "4821chalk lagoon tiara wharf", "4821-chal-lago-tiar-whar",
        "4821 CHALK lagoo tiar wharf"}) {
    auto parsed = PairingCode::parse(typed);
    ASSERT_TRUE(parsed) << typed << ": " << parsed.error().message;
    EXPECT_EQ(parsed.value().canonical(), canon) << typed;
  }
}

TEST(PairingCode, EveryWordsFirstFourLettersNameItAndNoWordIsOneTypoFromAnother) {
  std::set<std::string> keys;
  for (std::string_view w : kCodeWords) {
    EXPECT_TRUE(keys.insert(std::string(w.substr(0, 4))).second) << w;
    for (char c : w) EXPECT_TRUE(c >= 'a' && c <= 'z') << w;
    EXPECT_EQ(find_code_word(w.substr(0, std::min<std::size_t>(4, w.size()))), find_code_word(w)) << w;
  }
  EXPECT_TRUE(std::is_sorted(kCodeWords.begin(), kCodeWords.end()));
  // Dropping any one letter of a word gives no other word of the list.
  for (std::string_view w : kCodeWords)
    for (std::size_t i = 0; i < w.size(); ++i) {
      std::string dropped = std::string(w.substr(0, i)) + std::string(w.substr(i + 1));
      EXPECT_FALSE(std::binary_search(kCodeWords.begin(), kCodeWords.end(), dropped)) << w << " -> " << dropped;
    }
}

TEST(PairingCode, ATypoIsNamedWithASuggestion) {
  auto typo = PairingCode::parse("4821-chalk-lagono-tiara-wharf");  // two letters swapped
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().code, Errc::pairing_code_mistyped);
  EXPECT_NE(typo.error().message.find("unknown word 'lagono'"), std::string::npos) << typo.error().message;
  EXPECT_NE(typo.error().message.find("did you mean 'lagoon'?"), std::string::npos) << typo.error().message;

  auto missing_letter = PairingCode::parse("4821-chalk-lagoon-tiara-wharff");
  ASSERT_FALSE(missing_letter);
  EXPECT_NE(missing_letter.error().message.find("did you mean 'wharf'?"), std::string::npos);
  // A short word one swap from two words: both are offered ("ham" typed "ahm").
  const auto near = nearest_code_words("ahm");
  EXPECT_GE(near.size(), 2u);
  EXPECT_NE(std::find(near.begin(), near.end(), "ham"), near.end());

  auto nonsense = PairingCode::parse("4821-chalk-lagoon-tiara-qqqqqqqq");
  ASSERT_FALSE(nonsense);
  EXPECT_EQ(nonsense.error().code, Errc::pairing_code_mistyped);
  EXPECT_NE(nonsense.error().message.find("unknown word 'qqqqqqqq'"), std::string::npos);
  EXPECT_EQ(nonsense.error().message.find("did you mean"), std::string::npos) << nonsense.error().message;

  auto too_short = PairingCode::parse("4821-cha-lagoon-tiara-wharf");  // 3 letters name no word
  ASSERT_FALSE(too_short);
  EXPECT_EQ(too_short.error().code, Errc::pairing_code_mistyped);
}

// A mistyped word stays a mistyped word even when the code's number and
// letters come to 24 symbols whose last one happens to check as the older
// format's (1 in 32 numbers here): read as an older code it was sent, the
// receiver refused it, and the typo cost one of the code's three attempts
// (integration.pairing.typo failed so now and then).
TEST(PairingCode, AMistypedWordIsNeverReadAsAnOlderCode) {
  for (int number = 0; number < 10000; ++number) {
    char digits[5];
    std::snprintf(digits, sizeof digits, "%04d", number);
    const std::string typed = std::string(digits) + "-lagono-levy-delve-floss";  // 4 + 6 + 4 + 5 + 5 = 24
    auto parsed = PairingCode::parse(typed);
    ASSERT_FALSE(parsed) << typed << " was read as a code";
    ASSERT_EQ(parsed.error().code, Errc::pairing_code_mistyped) << typed;
    ASSERT_NE(parsed.error().message.find("unknown word 'lagono'"), std::string::npos) << parsed.error().message;
  }
}

TEST(PairingCode, WrongNumberOfWordsOrDigitsIsNotACode) {
  for (const std::string typed : {"4821-chalk-lagoon-tiara", "4821-chalk-lagoon-tiara-wharf-chalk", "482-chalk-tiara-wharf",
                                  "48211-chalk-lagoon-tiara-wharf", "chalk-lagoon-tiara-wharf", "", "4821"}) {
    auto parsed = PairingCode::parse(typed);
    ASSERT_FALSE(parsed) << typed;
    EXPECT_EQ(parsed.error().code, Errc::bad_pairing_code) << typed << ": " << parsed.error().message;
  }
  auto three = PairingCode::parse("4821-chalk-lagoon-tiara");
  EXPECT_NE(three.error().message.find("this has 3 words"), std::string::npos) << three.error().message;
}

TEST(PairingCode, LooksLikeAWordsCode) {
  EXPECT_TRUE(PairingCode::looks_like_words_code("4821-chalk-lagoon-tiara-wharf"));
  EXPECT_TRUE(PairingCode::looks_like_words_code("4821 chlak"));
  EXPECT_FALSE(PairingCode::looks_like_words_code("4821"));
  EXPECT_FALSE(PairingCode::looks_like_words_code("correct horse battery staple"));
  EXPECT_FALSE(PairingCode::looks_like_words_code("57CA-1J52-KQAJ-B9PZ-3NAY-9ZAG"));
  EXPECT_FALSE(PairingCode::looks_like_words_code("4821-chalk-2lagoon"));
}

TEST(LegacyPairingCode, ParseForgivesCaseSeparatorsAndLookalikes) {
  auto code = legacy_code();
  ASSERT_TRUE(code);
  const std::string canon = code.value().canonical();

  std::string lower = code.value().display();
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) { return static_cast<char>(std::tolower(c)); });
  std::string spaced;
  for (std::size_t i = 0; i < canon.size(); ++i) spaced += (i % 4 == 0 && i ? "  " : "") + std::string(1, canon[i]);
  std::string lookalikes = canon;
  for (char& c : lookalikes) {
    if (c == '1') c = 'l';
    if (c == '0') c = 'O';
  }
  std::string dotted = code.value().display();
  std::replace(dotted.begin(), dotted.end(), '-', '.');

  for (const std::string& typed : {lower, canon, spaced, lookalikes, dotted, " " + canon + "\n"}) {
    auto parsed = PairingCode::parse(typed);
    ASSERT_TRUE(parsed) << typed << ": " << parsed.error().message;
    EXPECT_EQ(parsed.value().canonical(), canon) << typed;
  }
}

TEST(LegacyPairingCode, IAndLReadAsOne) {
  // Build a code whose canonical form holds 1s and 0s, then type them as I/L/o.
  for (int tries = 0; tries < 200; ++tries) {
    auto code = legacy_code();
    ASSERT_TRUE(code);
    std::string c = code.value().canonical();
    if (c.find('1') == std::string::npos || c.find('0') == std::string::npos) continue;
    std::string typed = c;
    bool use_i = true;
    for (char& ch : typed) {
      if (ch == '1') {
        ch = use_i ? 'i' : 'L';
        use_i = !use_i;
      } else if (ch == '0') {
        ch = 'o';
      }
    }
    auto parsed = PairingCode::parse(typed);
    ASSERT_TRUE(parsed) << typed;
    EXPECT_EQ(parsed.value().canonical(), c);
    return;
  }
  GTEST_SKIP() << "no code with both 1 and 0 in 200 tries (vanishingly unlikely)";
}

TEST(LegacyPairingCode, TypoIsReportedAsMistyped) {
  auto code = legacy_code();
  ASSERT_TRUE(code);
  int detected = 0;
  for (std::size_t pos = 0; pos < PairingCode::kLegacySymbols; ++pos) {
    std::string typed = code.value().canonical();
    typed[pos] = typed[pos] == 'Z' ? 'Y' : 'Z';
    auto parsed = PairingCode::parse(typed);
    if (!parsed) {
      EXPECT_EQ(parsed.error().code, Errc::pairing_code_mistyped);
      ++detected;
    }
  }
  // The check symbol misses a given typo with probability 1/32.
  EXPECT_GE(detected, 18);
}

TEST(LegacyPairingCode, RejectsWrongLengthAndLetters) {
  auto code = legacy_code();
  ASSERT_TRUE(code);
  std::string c = code.value().canonical();
  auto short_code = PairingCode::parse(c.substr(0, 20));
  ASSERT_FALSE(short_code);
  EXPECT_EQ(short_code.error().code, Errc::bad_pairing_code);
  EXPECT_FALSE(PairingCode::parse(c + "A"));
  EXPECT_FALSE(PairingCode::parse(""));
  std::string with_u = c;
  with_u[3] = 'U';
  auto u = PairingCode::parse(with_u);
  ASSERT_FALSE(u);
  EXPECT_EQ(u.error().code, Errc::bad_pairing_code);
  EXPECT_NE(u.error().message.find("'U'"), std::string::npos) << u.error().message;
  EXPECT_FALSE(PairingCode::parse(c.substr(0, 23) + "\x01"));
}

}  // namespace
}  // namespace braid::security
