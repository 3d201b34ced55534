#include "engine/security/pairing_code.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>

namespace braid::security {
namespace {

TEST(PairingCode, HasAtLeast100BitsOfRandomness) {
  EXPECT_GE(PairingCode::kEntropyBits, 100u);
  EXPECT_EQ(PairingCode::kAlphabet.size(), 32u);  // 5 bits per random symbol
}

TEST(PairingCode, FormatIsSixGroupsOfFour) {
  auto code = PairingCode::generate();
  ASSERT_TRUE(code);
  std::string shown = code.value().display();
  ASSERT_EQ(shown.size(), 29u) << shown;
  for (std::size_t i = 0; i < shown.size(); ++i) {
    if (i % 5 == 4) EXPECT_EQ(shown[i], '-') << shown;
    else EXPECT_NE(PairingCode::kAlphabet.find(shown[i]), std::string_view::npos) << shown;
  }
  for (char c : std::string_view("ILOU")) EXPECT_EQ(shown.find(c), std::string::npos);
}

TEST(PairingCode, CodesAreUniqueAndSymbolsUniform) {
  std::set<std::string> seen;
  std::array<int, 32> counts{};
  constexpr int kCodes = 2000;
  for (int i = 0; i < kCodes; ++i) {
    auto code = PairingCode::generate();
    ASSERT_TRUE(code);
    seen.insert(code.value().canonical());
    for (std::size_t j = 0; j < PairingCode::kRandomSymbols; ++j)
      ++counts[PairingCode::kAlphabet.find(code.value().canonical()[j])];
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kCodes));
  // 46000 symbols over 32 values: expect 1437.5 each; a chi-square over 31
  // degrees of freedom stays below 70 except with probability ~1e-4.
  double expected = kCodes * PairingCode::kRandomSymbols / 32.0, chi2 = 0;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 70.0);
}

TEST(PairingCode, ParseRoundTrip) {
  auto code = PairingCode::generate();
  ASSERT_TRUE(code);
  auto parsed = PairingCode::parse(code.value().display());
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed.value().canonical(), code.value().canonical());
}

TEST(PairingCode, ParseForgivesCaseSeparatorsAndLookalikes) {
  auto code = PairingCode::generate();
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

TEST(PairingCode, IAndLReadAsOne) {
  // Build a code whose canonical form holds 1s and 0s, then type them as I/L/o.
  for (int tries = 0; tries < 200; ++tries) {
    auto code = PairingCode::generate();
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

TEST(PairingCode, TypoIsReportedAsMistyped) {
  auto code = PairingCode::generate();
  ASSERT_TRUE(code);
  int detected = 0;
  for (std::size_t pos = 0; pos < PairingCode::kSymbols; ++pos) {
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

TEST(PairingCode, RejectsWrongLengthAndLetters) {
  auto code = PairingCode::generate();
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
