// Which offers wait (judge_offer), and the board that holds them: decided
// once, forgotten once settled elsewhere (timed out, the session ended).
#include "engine/serve/offer_board.hpp"

#include <gtest/gtest.h>

namespace braid::serve {
namespace {

using K = PolicyVerdict::Kind;

transfer::OfferQuestion question(const std::string& peer, bool paired_now, uint64_t bytes) {
  transfer::OfferQuestion q;
  q.peer = peer;
  q.paired_now = paired_now;
  q.bytes = bytes;
  q.entries = 1;
  return q;
}

TEST(JudgeOffer, PinnedPeersSendWithoutAskingNewlyPairedOnesWait) {
  ServeConfig c;
  EXPECT_EQ(judge_offer(c, question("vm", false, 100), std::nullopt).kind, K::accept);
  const auto v = judge_offer(c, question("vm-2", true, 100), std::nullopt);
  EXPECT_EQ(v.kind, K::ask);
  EXPECT_EQ(v.why, "it paired with the code in this session");
}

TEST(JudgeOffer, ListedLabelsNoneAndSize) {
  ServeConfig c;
  c.accept_from = AcceptFrom::listed;
  c.accept_labels = {"vm"};
  EXPECT_EQ(judge_offer(c, question("vm", false, 1), std::nullopt).kind, K::accept);
  EXPECT_EQ(judge_offer(c, question("laptop", false, 1), std::nullopt).kind, K::ask);
  c.accept_from = AcceptFrom::none;
  EXPECT_EQ(judge_offer(c, question("vm", false, 1), std::nullopt).kind, K::ask);
  c.accept_from = AcceptFrom::pinned;
  c.ask_above_bytes = 1000;
  EXPECT_EQ(judge_offer(c, question("vm", false, 1000), std::nullopt).kind, K::accept);
  EXPECT_EQ(judge_offer(c, question("vm", false, 1001), std::nullopt).kind, K::ask);
}

TEST(JudgeOffer, DiskReserveRefuses) {
  ServeConfig c;
  c.disk_reserve_bytes = 500;
  EXPECT_EQ(judge_offer(c, question("vm", false, 400), 1000).kind, K::accept);   // 600 left
  EXPECT_EQ(judge_offer(c, question("vm", false, 600), 1000).kind, K::refuse);   // 400 left
  EXPECT_EQ(judge_offer(c, question("vm", false, 2000), 1000).kind, K::refuse);  // does not fit
  EXPECT_EQ(judge_offer(c, question("vm", false, 600), std::nullopt).kind, K::accept);  // unknown: not checked
}

struct Recorded {
  int calls = 0;
  transfer::OfferDecision last;
};

std::shared_ptr<transfer::PendingOffer> pending(Recorded& r) {
  return std::make_shared<transfer::PendingOffer>([&r](const transfer::OfferDecision& d) {
    ++r.calls;
    r.last = d;
  });
}

TEST(OfferBoard, DecidesOnceAndForgets) {
  OfferBoard board;
  Recorded a, b;
  const uint64_t ia = board.add(question("vm", true, 1), pending(a), "why", 0);
  const uint64_t ib = board.add(question("pc", true, 1), pending(b), "why", 0);
  EXPECT_NE(ia, ib);
  EXPECT_EQ(board.list().size(), 2u);
  EXPECT_EQ(board.decide(ia, {false, wire::RefuseReason::declined, "no thanks"}), "");
  EXPECT_EQ(a.calls, 1);
  EXPECT_FALSE(a.last.accept);
  EXPECT_EQ(a.last.message, "no thanks");
  EXPECT_NE(board.decide(ia, {true, {}, {}}), "");  // decided already: not twice
  EXPECT_EQ(a.calls, 1);
  ASSERT_EQ(board.list().size(), 1u);
  EXPECT_EQ(board.list()[0].id, ib);
  EXPECT_NE(board.decide(999, {true, {}, {}}).find("no offer 999"), std::string::npos);
}

TEST(OfferBoard, SettledElsewhereLeavesTheList) {
  OfferBoard board;
  Recorded a, b;
  auto pa = pending(a);
  auto pb = pending(b);
  const uint64_t ia = board.add(question("vm", true, 1), pa, "why", 0);
  board.add(question("pc", true, 1), pb, "why", 0);
  pb->withdraw();                                               // its session ended
  EXPECT_TRUE(pa->decide({false, wire::RefuseReason::declined, "timeout"}));  // its time ran out
  EXPECT_TRUE(board.list().empty());
  EXPECT_NE(board.decide(ia, {true, {}, {}}), "");
  EXPECT_EQ(b.calls, 0);  // a withdrawn offer reaches nothing
  EXPECT_EQ(a.calls, 1);
}

}  // namespace
}  // namespace braid::serve
