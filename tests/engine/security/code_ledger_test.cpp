// The one-time code's rules (code_ledger.h), pure: spent on first success,
// retired after three wrong attempts, stale attempts refused and not
// counted. Then OneTimeCode (code_keeper.h): the same rules with real codes.
#include "engine/security/code_ledger.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "engine/security/code_keeper.h"

namespace braid::security {
namespace {

using Verdict = CodeLedger::Verdict;
using Change = CodeLedger::Change;

TEST(CodeLedger, FirstSuccessSpendsTheCode) {
  CodeLedger l;
  const auto g = l.generation();
  auto s = l.settle(g, true);
  EXPECT_EQ(s.verdict, Verdict::accepted);
  EXPECT_EQ(s.change, Change::spent);
  EXPECT_NE(l.generation(), g);
  // A second identity with the same code (an attempt begun meanwhile, or a
  // new one that leased the old generation) is refused even if right.
  auto again = l.settle(g, true);
  EXPECT_EQ(again.verdict, Verdict::stale);
  EXPECT_EQ(again.change, Change::none);
}

TEST(CodeLedger, ThreeWrongAttemptsRetireTheCode) {
  CodeLedger l;
  const auto g = l.generation();
  auto s1 = l.settle(g, false);
  auto s2 = l.settle(g, false);
  EXPECT_EQ(s1.verdict, Verdict::wrong_code);
  EXPECT_EQ(s1.change, Change::none);
  EXPECT_EQ(s1.failures, 1u);
  EXPECT_EQ(s2.failures, 2u);
  EXPECT_EQ(l.failures(), 2u);
  EXPECT_EQ(l.generation(), g);  // still live after two
  auto s3 = l.settle(g, false);
  EXPECT_EQ(s3.verdict, Verdict::wrong_code);
  EXPECT_EQ(s3.change, Change::retired);
  EXPECT_EQ(s3.failures, CodeLedger::kMaxFailures);
  EXPECT_NE(l.generation(), g);
  EXPECT_EQ(l.failures(), 0u);  // the new code starts clean
  // A 4th attempt with the old, right code is refused.
  EXPECT_EQ(l.settle(g, true).verdict, Verdict::stale);
  // The new code works.
  EXPECT_EQ(l.settle(l.generation(), true).verdict, Verdict::accepted);
}

TEST(CodeLedger, SuccessAfterFailuresStillSpends) {
  CodeLedger l;
  const auto g = l.generation();
  l.settle(g, false);
  l.settle(g, false);
  auto s = l.settle(g, true);
  EXPECT_EQ(s.verdict, Verdict::accepted);
  EXPECT_EQ(s.change, Change::spent);
  EXPECT_EQ(s.failures, 2u);
}

TEST(CodeLedger, StaleAttemptsCountAgainstNothing) {
  CodeLedger l;
  const auto old = l.generation();
  l.settle(old, true);  // spent
  const auto live = l.generation();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(l.settle(old, false).verdict, Verdict::stale);
  EXPECT_EQ(l.failures(), 0u);
  EXPECT_EQ(l.generation(), live);
  EXPECT_EQ(l.settle(old + 100, false).verdict, Verdict::stale);  // a generation never issued
  EXPECT_EQ(l.generation(), live);
}

TEST(CodeLedger, ConcurrentAttemptsGetAtMostThreeAnswersPerCode) {
  // Ten attempts lease the same code before any settles (ten connections at
  // once): three wrong ones are answered, the rest are refused as stale.
  CodeLedger l;
  const auto g = l.generation();
  int answered = 0;
  for (int i = 0; i < 10; ++i) answered += l.settle(g, false).verdict == Verdict::wrong_code;
  EXPECT_EQ(answered, 3);
}

TEST(CodeLedger, TenRetiredCodesClosePairingForGood) {
  // 30 wrong guesses per receiver at most: P(a 44-bit code guessed) <= 30 / 2^44.
  CodeLedger l;
  unsigned answered = 0;
  for (unsigned code = 1; code <= CodeLedger::kMaxRetiredCodes; ++code) {
    const auto g = l.generation();
    Change last = Change::none;
    for (unsigned i = 0; i < CodeLedger::kMaxFailures; ++i) {
      auto s = l.settle(g, false);
      answered += s.verdict == Verdict::wrong_code;
      last = s.change;
    }
    EXPECT_EQ(last, code < CodeLedger::kMaxRetiredCodes ? Change::retired : Change::closed) << code;
    EXPECT_EQ(l.closed(), code == CodeLedger::kMaxRetiredCodes);
  }
  EXPECT_EQ(answered, 30u);
  // Closed: even the live generation, right or wrong, is refused and counts nothing.
  EXPECT_EQ(l.settle(l.generation(), true).verdict, Verdict::stale);
  EXPECT_EQ(l.settle(l.generation(), false).verdict, Verdict::stale);
}

TEST(CodeLedger, SpentCodesDoNotCountTowardsClosing) {
  CodeLedger l;
  for (int i = 0; i < 50; ++i) {
    l.settle(l.generation(), false);
    l.settle(l.generation(), false);
    EXPECT_EQ(l.settle(l.generation(), true).verdict, Verdict::accepted);
  }
  EXPECT_FALSE(l.closed());
}

PairingCode fixed_code() {
  auto c = PairingCode::generate();
  EXPECT_TRUE(c);
  return c.value();
}

TEST(OneTimeCode, ReplacesASpentCodeAndReportsIt) {
  const PairingCode first = fixed_code();
  std::vector<std::pair<Change, std::string>> changes;
  OneTimeCode keeper(first, [&](const OneTimeCode::Changed& c) {
    changes.emplace_back(c.why, c.next ? c.next->canonical() : "");
  });
  auto lease = keeper.lease();
  ASSERT_TRUE(lease);
  EXPECT_EQ(lease.value().code.canonical(), first.canonical());
  EXPECT_EQ(keeper.settle(lease.value().generation, true), Verdict::accepted);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].first, Change::spent);
  auto now = keeper.current();
  ASSERT_TRUE(now);
  EXPECT_NE(now->canonical(), first.canonical());
  EXPECT_EQ(changes[0].second, now->canonical());
  EXPECT_EQ(keeper.settle(lease.value().generation, true), Verdict::stale);  // the old lease is spent
}

TEST(OneTimeCode, RetiresAfterThreeWrongAttempts) {
  const PairingCode first = fixed_code();
  int retired = 0;
  OneTimeCode keeper(first, [&](const OneTimeCode::Changed& c) {
    retired += c.why == Change::retired;
    EXPECT_EQ(c.failures, CodeLedger::kMaxFailures);
  });
  auto lease = keeper.lease();
  ASSERT_TRUE(lease);
  for (unsigned i = 1; i <= 3; ++i) {
    EXPECT_EQ(keeper.settle(lease.value().generation, false), Verdict::wrong_code);
    EXPECT_EQ(keeper.failures(), i % 3);
  }
  EXPECT_EQ(retired, 1);
  EXPECT_NE(keeper.current()->canonical(), first.canonical());
  auto next = keeper.lease();
  ASSERT_TRUE(next);
  EXPECT_NE(next.value().generation, lease.value().generation);
}

TEST(OneTimeCode, ClosedLeasesNothingAndSaysWhy) {
  std::vector<Change> changes;
  OneTimeCode keeper(fixed_code(), [&](const OneTimeCode::Changed& c) {
    changes.push_back(c.why);
    EXPECT_EQ(c.next == nullptr, c.why == Change::closed);
  });
  for (unsigned code = 0; code < CodeLedger::kMaxRetiredCodes; ++code) {
    auto lease = keeper.lease();
    ASSERT_TRUE(lease) << code;
    for (unsigned i = 0; i < CodeLedger::kMaxFailures; ++i) keeper.settle(lease.value().generation, false);
  }
  ASSERT_EQ(changes.size(), CodeLedger::kMaxRetiredCodes);
  EXPECT_EQ(changes.back(), Change::closed);
  EXPECT_FALSE(keeper.current());
  auto lease = keeper.lease();
  ASSERT_FALSE(lease);
  EXPECT_EQ(lease.error().code, Errc::pairing_failed);
  EXPECT_NE(lease.error().message.find("30 wrong attempts"), std::string::npos) << lease.error().message;
}

TEST(OneTimeCode, ManyThreadsSettleOneCodeAtMostThreeTimes) {
  OneTimeCode keeper(fixed_code());
  auto lease = keeper.lease();
  ASSERT_TRUE(lease);
  std::atomic<int> answered{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      for (int j = 0; j < 25; ++j)
        answered += keeper.settle(lease.value().generation, false) == Verdict::wrong_code;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(answered.load(), 3);
}

}  // namespace
}  // namespace braid::security
