#include "engine/security/code_strength.h"

#include <gtest/gtest.h>

#include "engine/security/pairing_code.h"

namespace braid::security {
namespace {

TEST(CodeStrength, GeneratedAndLegacyCodesAreAccepted) {
  auto code = PairingCode::generate();
  ASSERT_TRUE(code);
  EXPECT_TRUE(check_chosen_code(code.value().display()));
  EXPECT_TRUE(check_chosen_code("4821 chalk lagoon tiara wharf"));
}

TEST(CodeStrength, WeakTextIsRefusedWithOneLineThatSaysWhatToDo) {
  for (const char* weak : {"x", "secret", "password", "right-code", "hunter2", "correcthorse", "1234567890123456789012345678",
                           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "abcabcabcabcabcabcabcabcabcabcabc",
                           "Password1!", "qwertyuiop"}) {
    auto st = check_chosen_code(weak);
    ASSERT_FALSE(st) << weak << " (" << estimate_text_bits(weak) << " bits)";
    EXPECT_EQ(st.error().code, Errc::weak_pairing_code);
    EXPECT_EQ(st.error().message.find('\n'), std::string::npos);
    EXPECT_NE(st.error().message.find("too easy to guess"), std::string::npos) << st.error().message;
    EXPECT_EQ(st.error().message.find(weak), std::string::npos) << "the code is not echoed";
  }
}

TEST(CodeStrength, LongRandomLookingTextIsAccepted) {
  for (const char* strong : {"9f86d081884c7d659a2feaa0c55ad015",     // openssl rand -hex 16
                             "k3Vq9-LmZ2x-Pw7Rt-Yb4Nc",             // 20 characters, upper case and digits
                             "correct horse battery staple"}) {     // 28 characters (four words)
    EXPECT_TRUE(check_chosen_code(strong)) << strong << " (" << estimate_text_bits(strong) << " bits)";
  }
}

TEST(CodeStrength, TheEstimateFollowsTheDocumentedRule) {
  EXPECT_DOUBLE_EQ(estimate_text_bits(""), 0.0);
  EXPECT_DOUBLE_EQ(estimate_text_bits("q"), 4.0);
  EXPECT_DOUBLE_EQ(estimate_text_bits("qwfpgjlu"), 4.0 + 7 * 2.0);
  EXPECT_DOUBLE_EQ(estimate_text_bits("qwfpgjluyazmtdhn"), 4.0 + 7 * 2.0 + 8 * 1.5);
  EXPECT_DOUBLE_EQ(estimate_text_bits("qwfpgjluyazmtdhneiokxcvbrs"), 4.0 + 14.0 + 18.0 + 6.0);
  EXPECT_DOUBLE_EQ(estimate_text_bits("Qwfpgjlu"), 18.0);              // upper case alone: no bonus
  EXPECT_DOUBLE_EQ(estimate_text_bits("Qwfpgjl9"), 18.0 + 6.0);        // upper case and a non-letter
  EXPECT_DOUBLE_EQ(estimate_text_bits("aaaaaaaa"), estimate_text_bits("aa"));  // a run keeps two
  EXPECT_DOUBLE_EQ(estimate_text_bits("x123456789"), estimate_text_bits("x12"));
  EXPECT_DOUBLE_EQ(estimate_text_bits("hunterhunterhunter"), estimate_text_bits("hunter"));  // repeats count once
}

TEST(CodeStrength, AMistypedWordsCodeIsRefusedWithTheSuggestionNotTakenAsText) {
  auto st = check_chosen_code("4821-chalk-lagono-tiara-wharf");
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().code, Errc::pairing_code_mistyped);
  EXPECT_NE(st.error().message.find("did you mean 'lagoon'?"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace braid::security
