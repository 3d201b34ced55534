// The session machines alone, message by message (whole sessions in virtual
// time are in tests/sim/session_sim_test.cpp).
#include <gtest/gtest.h>

#include <deque>
#include <set>

#include "core/session/receiver.hpp"
#include "core/session/sender.hpp"
#include "machine_actions.hpp"

namespace braid::session {
namespace {

const Time t0 = Time::zero();

using test::drain;

/// A transfer of one file "f" of `size` bytes.
TransferSpec one_file(uint64_t size) {
  wire::ManifestEntry e;
  e.path = "f";
  e.size = size;
  TransferSpec spec;
  spec.entries = {e};
  return spec;
}

wire::Digest fake_root(wire::HashAlgo, std::vector<PieceRecord> r) {
  wire::Digest d;
  d.size = 16;
  uint64_t sum = 0;
  for (const auto& x : r) sum += x.offset * 7 + x.length + x.hash.bytes[0];
  for (int i = 0; i < 8; ++i) d.bytes[i] = static_cast<uint8_t>(sum >> (8 * i));
  return d;
}

wire::Offer offer(uint32_t id, uint64_t size) {
  wire::Offer o;
  o.transfer_id = id;
  o.chunk_size = 1 << 20;
  wire::ManifestEntry e;
  e.path = "f";
  e.size = size;
  o.entries = {e};
  return o;
}

Receiver started_receiver(size_t max_lanes = 64) {
  ReceiverConfig cfg;
  cfg.max_lanes = max_lanes;
  cfg.root_hash = fake_root;
  cfg.done_wait = Duration::seconds(2);
  Receiver r(cfg);
  r.start(LaneTraits::tcp(), t0);
  return r;
}

TEST(ReceiverMachine, LanesBeyondTheCapAreToldWhyOnTheirOwnLane) {
  Receiver r = started_receiver(2);
  (void)r.poll_action();  // addresses
  ASSERT_TRUE(r.handle_lane_connected(1, LaneTraits::tcp(), t0));
  r.handle_message(1, wire::LaneJoin{wire::kProtocolVersion, 1}, t0);
  ASSERT_TRUE(r.handle_lane_connected(2, LaneTraits::tcp(), t0));
  r.handle_message(2, wire::LaneJoin{wire::kProtocolVersion, 2}, t0);
  std::vector<RecvSendMessage> sent;
  std::vector<RecvCloseLane> closed;
  while (auto a = r.poll_action()) {
    if (auto* s = std::get_if<RecvSendMessage>(&*a)) sent.push_back(*s);
    if (auto* c = std::get_if<RecvCloseLane>(&*a)) closed.push_back(*c);
  }
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<wire::LaneWelcome>(sent[0].msg));
  ASSERT_TRUE(std::holds_alternative<wire::LaneClosed>(sent[1].msg));
  EXPECT_EQ(sent[1].lane, 2u);
  EXPECT_NE(std::get<wire::LaneClosed>(sent[1].msg).reason.find("at most 2 lanes"), std::string::npos);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].lane, 2u);
  // A lane id joins once.
  EXPECT_FALSE(r.handle_lane_connected(1, LaneTraits::tcp(), t0));
}

TEST(ReceiverMachine, AFirstFrameThatIsNotAJoinClosesTheLane) {
  Receiver r = started_receiver();
  (void)r.poll_action();
  ASSERT_TRUE(r.handle_lane_connected(5, LaneTraits::tcp(), t0));
  r.handle_message(5, offer(1, 10), t0);
  EXPECT_EQ(drain<RecvCloseLane>(r).size(), 1u);
  EXPECT_EQ(r.open_lanes(), 1u);
}

TEST(ReceiverMachine, ARepeatedOfferGetsTheSameAnswerAndIsPreparedOnce) {
  Receiver r = started_receiver();
  (void)r.poll_action();
  r.handle_message(0, offer(1, 100), t0);
  EXPECT_EQ(drain<PrepareOffer>(r).size(), 1u);
  r.handle_offer_prepared(1, wire::Refuse{1, wire::RefuseReason::no_space, "full"}, t0);
  auto first = drain<RecvSendMessage>(r);
  r.handle_message(0, offer(1, 100), t0);
  std::vector<PrepareOffer> again;
  std::vector<RecvSendMessage> answers;
  while (auto a = r.poll_action()) {
    if (auto* p = std::get_if<PrepareOffer>(&*a)) again.push_back(*p);
    if (auto* s = std::get_if<RecvSendMessage>(&*a)) answers.push_back(*s);
  }
  EXPECT_TRUE(again.empty());
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(std::get<wire::Refuse>(answers[0].msg).reason, wire::RefuseReason::no_space);
}

TEST(ReceiverMachine, DoneWaitsForPiecesStillOnTheirWayThenFinalizes) {
  Receiver r = started_receiver();
  (void)r.poll_action();
  r.handle_message(0, offer(1, 2 << 20), t0);
  r.handle_offer_prepared(1, wire::Accept{1, {}}, t0);
  drain<RecvSendMessage>(r);
  const PieceRecord a{0, 1 << 20, {}}, b{1 << 20, 1 << 20, {}};
  r.handle_piece_verified(0, 1, 0, a, Duration::millis(5), t0);
  wire::Done done{1, fake_root(wire::HashAlgo::xxh3_128, {a, b})};
  r.handle_message(0, done, t0);
  EXPECT_TRUE(drain<FinalizeTransfer>(r).empty());  // piece 1 is still being written
  r.handle_piece_verified(0, 1, 1, b, Duration::millis(5), t0 + Duration::millis(10));
  EXPECT_EQ(drain<FinalizeTransfer>(r).size(), 1u);
  r.handle_finalized(1, wire::ResultStatus::verified, "", t0 + Duration::millis(20));
  auto sent = drain<RecvSendMessage>(r);
  ASSERT_FALSE(sent.empty());
  EXPECT_EQ(std::get<wire::TransferResult>(sent.back().msg).status, wire::ResultStatus::verified);
  // done said again: the same verdict, no second finalize.
  r.handle_message(0, done, t0 + Duration::millis(30));
  std::vector<FinalizeTransfer> fin;
  std::vector<RecvSendMessage> again;
  while (auto x = r.poll_action()) {
    if (auto* f = std::get_if<FinalizeTransfer>(&*x)) fin.push_back(*f);
    if (auto* s = std::get_if<RecvSendMessage>(&*x)) again.push_back(*s);
  }
  EXPECT_TRUE(fin.empty());
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<wire::TransferResult>(again[0].msg));
}

// The session ends (a signal, every lane lost) while done waits for its
// last piece: a piece verified after that counts for nothing, and nothing
// is put in place — the temporaries and the journal stay for a later run.
TEST(ReceiverMachine, NothingIsFinalizedAfterTheSessionEnded) {
  Receiver r = started_receiver();
  (void)r.poll_action();
  r.handle_message(0, offer(1, 2 << 20), t0);
  r.handle_offer_prepared(1, wire::Accept{1, {}}, t0);
  const PieceRecord a{0, 1 << 20, {}}, b{1 << 20, 1 << 20, {}};
  r.handle_piece_verified(0, 1, 0, a, Duration::millis(5), t0);
  r.handle_message(0, wire::Done{1, fake_root(wire::HashAlgo::xxh3_128, {a, b})}, t0);
  drain<RecvSendMessage>(r);
  r.close("interrupted", t0 + Duration::millis(1));
  const auto kept = drain<AbandonTransfer>(r);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_FALSE(kept[0].status.has_value());
  r.handle_piece_verified(0, 1, 1, b, Duration::millis(5), t0 + Duration::millis(2));
  r.handle_timeout(t0 + Duration::seconds(5));
  EXPECT_TRUE(drain<FinalizeTransfer>(r).empty());
  EXPECT_FALSE(r.piece_verified(1, 1));
}

// An offer the engine finished preparing after the session ended (the user
// answered late): it is abandoned like the others, not left accepted forever.
TEST(ReceiverMachine, AnOfferPreparedAfterTheEndIsAbandoned) {
  Receiver r = started_receiver();
  (void)r.poll_action();
  r.handle_message(0, offer(1, 2 << 20), t0);
  r.handle_lane_failed(0, "EOF", t0);
  drain<SessionEnded>(r);
  r.handle_offer_prepared(1, wire::Accept{1, {}}, t0 + Duration::seconds(3));
  std::vector<AbandonTransfer> kept;
  std::vector<RecvSendMessage> sent;
  while (auto x = r.poll_action()) {
    if (auto* k = std::get_if<AbandonTransfer>(&*x)) kept.push_back(*k);
    if (auto* m = std::get_if<RecvSendMessage>(&*x)) sent.push_back(*m);
  }
  EXPECT_EQ(kept.size(), 1u);
  EXPECT_TRUE(sent.empty());
}

// Lanes open but none that carries messages: the session waits for one (the
// grace), a join ends the wait; the same sender's new session ends it at once.
TEST(ReceiverMachine, WithoutAMessageLaneTheSessionWaitsUntilTheGraceOrTheSendersReturn) {
  auto with_udp_lane = [] {
    Receiver r = started_receiver();
    r.handle_message(0, wire::UdpOpen{1, "10.0.0.1:1"}, t0);
    r.handle_udp_lane_opened(1, "10.0.0.1:1", "", t0);
    r.handle_lane_failed(0, "reset", t0 + Duration::seconds(1));
    while (r.poll_action()) {
    }
    return r;
  };
  {
    Receiver r = with_udp_lane();
    EXPECT_FALSE(r.ended());
    ASSERT_TRUE(r.poll_timeout().has_value());
    EXPECT_EQ(*r.poll_timeout(), t0 + Duration::seconds(11));
    r.handle_timeout(t0 + Duration::seconds(10));
    EXPECT_FALSE(r.ended());
    r.handle_timeout(t0 + Duration::seconds(11));
    EXPECT_TRUE(r.ended());
  }
  {
    Receiver r = with_udp_lane();
    ASSERT_TRUE(r.handle_lane_connected(2, LaneTraits::tcp(), t0 + Duration::seconds(2)));
    r.handle_message(2, wire::LaneJoin{wire::kProtocolVersion, 2}, t0 + Duration::seconds(2));
    r.handle_timeout(t0 + Duration::seconds(20));
    EXPECT_FALSE(r.ended());
  }
  {
    Receiver r = with_udp_lane();
    r.handle_peer_returned(t0 + Duration::seconds(2));
    EXPECT_TRUE(r.ended());
  }
  {
    // A session that still has its message lane is not touched: one sender may run two.
    Receiver r = started_receiver();
    r.handle_peer_returned(t0 + Duration::seconds(2));
    EXPECT_FALSE(r.ended());
  }
}

TEST(ReceiverMachine, AMissingPieceOrAWrongRootFailsAndKeepsTheTemporaries) {
  Receiver r = started_receiver();
  (void)r.poll_action();
  r.handle_message(0, offer(1, 2 << 20), t0);
  r.handle_offer_prepared(1, wire::Accept{1, {}}, t0);
  const PieceRecord a{0, 1 << 20, {}};
  r.handle_piece_verified(0, 1, 0, a, Duration::zero(), t0);
  drain<RecvSendMessage>(r);
  r.handle_message(0, wire::Done{1, {}}, t0);
  ASSERT_TRUE(r.poll_timeout().has_value());
  EXPECT_EQ(*r.poll_timeout(), t0 + Duration::seconds(2));
  r.handle_timeout(t0 + Duration::seconds(2));
  std::vector<AbandonTransfer> kept;
  std::vector<RecvSendMessage> sent;
  while (auto x = r.poll_action()) {
    if (auto* k = std::get_if<AbandonTransfer>(&*x)) kept.push_back(*k);
    if (auto* s = std::get_if<RecvSendMessage>(&*x)) sent.push_back(*s);
  }
  ASSERT_EQ(kept.size(), 1u);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(std::get<wire::TransferResult>(sent[0].msg).status, wire::ResultStatus::incomplete);

  Receiver r2 = started_receiver();
  (void)r2.poll_action();
  r2.handle_message(0, offer(1, 1 << 20), t0);
  r2.handle_offer_prepared(1, wire::Accept{1, {}}, t0);
  r2.handle_piece_verified(0, 1, 0, a, Duration::zero(), t0);
  drain<RecvSendMessage>(r2);
  r2.handle_message(0, wire::Done{1, {}}, t0);  // a root that cannot match
  auto res = drain<RecvSendMessage>(r2);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(std::get<wire::TransferResult>(res[0].msg).status, wire::ResultStatus::root_mismatch);
}

SenderConfig sender_config() {
  SenderConfig c;
  c.root_hash = fake_root;
  c.rate_limit = Rate::mbit(90);
  return c;
}

TEST(SenderMachine, TheRateLimitIsSplitOverTheLiveDataLanes) {
  Sender s(sender_config());
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  s.add_paths({{LaneKind::tcp, "a", "a"}, {LaneKind::tcp, "b", "b"}}, t0);
  auto caps = drain<SetLaneRate>(s);
  ASSERT_EQ(caps.size(), 1u);  // lane 0 alone so far: all of it
  EXPECT_NEAR(caps[0].rate->bits_per_second(), 90e6, 1);
  for (LaneNo id : {1u, 2u}) {
    s.handle_lane_connected(id, LaneTraits::tcp(), t0);
    s.handle_message(id, wire::LaneWelcome{id}, t0);
  }
  caps = drain<SetLaneRate>(s);
  std::map<LaneNo, double> last;
  for (const auto& c : caps) last[c.lane] = c.rate->bits_per_second();
  ASSERT_EQ(last.size(), 3u);
  for (const auto& [lane, bps] : last) EXPECT_NEAR(bps, 30e6, 1) << "lane " << lane;
  s.handle_lane_failed(2, "reset", true, t0 + Duration::seconds(1));
  last.clear();
  for (const auto& c : drain<SetLaneRate>(s)) last[c.lane] = c.rate->bits_per_second();
  EXPECT_NEAR(last.at(0), 45e6, 1);
  EXPECT_NEAR(last.at(1), 45e6, 1);
}

TEST(SenderMachine, ALaneTheReceiverRefusedIsNotOpenedAgain) {
  Sender s(sender_config());
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  s.add_paths({{LaneKind::tcp, "a", "a"}}, t0);
  s.handle_lane_connected(1, LaneTraits::tcp(), t0);
  s.handle_message(1, wire::LaneClosed{1, "the receiver takes at most 1 lanes per session"}, t0);
  drain<OpenLane>(s);
  s.handle_timeout(t0 + Duration::seconds(60));
  EXPECT_TRUE(drain<OpenLane>(s).empty());
  EXPECT_EQ(s.open_lanes(), 1u);
}

TEST(SenderMachine, ALaneThatWorkedIsOpenedAgainWithBackoff) {
  Sender s(sender_config());
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  s.add_paths({{LaneKind::tcp, "a", "a"}}, t0);
  drain<OpenLane>(s);
  s.handle_lane_connected(1, LaneTraits::tcp(), t0);
  s.handle_message(1, wire::LaneWelcome{1}, t0);
  s.handle_lane_failed(1, "reset", true, t0 + Duration::seconds(1));
  // Told to the receiver over the surviving lane, at once.
  bool announced = false;
  while (auto a = s.poll_action())
    if (auto* m = std::get_if<SendMessage>(&*a))
      announced = announced || (m->lane == 0 && std::holds_alternative<wire::LaneClosed>(m->msg));
  EXPECT_TRUE(announced);
  ASSERT_TRUE(s.poll_timeout().has_value());
  EXPECT_EQ(*s.poll_timeout(), t0 + Duration::seconds(1) + SenderConfig{}.reopen_backoff);
  s.handle_timeout(*s.poll_timeout());
  auto opens = drain<OpenLane>(s);
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_EQ(opens[0].lane, 2u);  // a fresh lane id: a lane id joins once
  EXPECT_EQ(opens[0].path.remote, "a");
}

TEST(SenderMachine, APathThatGoesAwayClosesItsLaneAtOnceAndTheReceiverIsTold) {
  Sender s(sender_config());
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  s.add_paths({{LaneKind::tcp, "a", "r"}, {LaneKind::tcp, "b", "r"}}, t0);
  for (LaneNo id : {1u, 2u}) {
    s.handle_lane_connected(id, LaneTraits::tcp(), t0);
    s.handle_message(id, wire::LaneWelcome{id}, t0);
  }
  drain<OpenLane>(s);
  const Time later = t0 + Duration::seconds(3);
  s.set_paths({{LaneKind::tcp, "a", "r"}}, later);  // interface b went down
  std::vector<CloseLane> closed;
  bool told = false;
  while (auto a = s.poll_action()) {
    if (auto* c = std::get_if<CloseLane>(&*a)) closed.push_back(*c);
    if (auto* m = std::get_if<SendMessage>(&*a))
      if (auto* lc = std::get_if<wire::LaneClosed>(&m->msg)) told = told || (lc->lane_id == 2 && m->lane != 2);
  }
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].lane, 2u);
  EXPECT_TRUE(told);
  // Never opened again while the path is gone, whatever the timers say.
  s.handle_timeout(later + Duration::seconds(30));
  EXPECT_TRUE(drain<OpenLane>(s).empty());
  EXPECT_EQ(s.open_lanes(), 2u);
}

TEST(SenderMachine, APathThatComesBackOrAppearsOpensALaneAtOnce) {
  Sender s(sender_config());
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  s.add_paths({{LaneKind::tcp, "a", "r"}}, t0);
  drain<OpenLane>(s);
  // Lane 1 never connects: its path is given up (it never worked).
  s.handle_lane_failed(1, "connect: network is unreachable", false, t0);
  s.handle_timeout(t0 + Duration::seconds(60));
  EXPECT_TRUE(drain<OpenLane>(s).empty());
  // The network changed: path a is tried again at once, path c is new.
  const Time t1 = t0 + Duration::seconds(61);
  s.set_paths({{LaneKind::tcp, "a", "r"}, {LaneKind::tcp, "c", "r"}}, t1);
  auto opens = drain<OpenLane>(s);
  ASSERT_EQ(opens.size(), 1u);  // c at once
  EXPECT_EQ(opens[0].path.local, "c");
  ASSERT_TRUE(s.poll_timeout().has_value());
  EXPECT_LE(*s.poll_timeout(), t1);  // a: due now
  s.handle_timeout(t1);
  opens = drain<OpenLane>(s);
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_EQ(opens[0].path.local, "a");
}

TEST(SenderMachine, NewPathsStayWithinMaxLanes) {
  SenderConfig c = sender_config();
  c.max_lanes = 3;
  Sender s(c);
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  s.add_paths({{LaneKind::tcp, "a", "r"}}, t0);
  drain<OpenLane>(s);
  s.set_paths({{LaneKind::tcp, "a", "r"}, {LaneKind::tcp, "b", "r"}, {LaneKind::tcp, "c", "r"}}, t0);
  EXPECT_EQ(drain<OpenLane>(s).size(), 1u);
}

TEST(SenderMachine, TheSamePathsAgainOpenNothing) {
  Sender s(sender_config());
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  s.add_paths({{LaneKind::tcp, "a", "r"}, {LaneKind::tcp, "b", "r"}}, t0);
  drain<OpenLane>(s);
  s.handle_lane_connected(1, LaneTraits::tcp(), t0);
  s.handle_message(1, wire::LaneWelcome{1}, t0);
  s.handle_lane_failed(2, "refused by the receiver: the receiver takes at most 2 lanes", false, t0);
  drain<OpenLane>(s);
  for (int k = 1; k <= 3; ++k) {
    s.set_paths({{LaneKind::tcp, "a", "r"}, {LaneKind::tcp, "b", "r"}}, t0 + Duration::seconds(k));
    s.handle_timeout(t0 + Duration::seconds(k));
  }
  // a is open; b was refused by the receiver: neither opens again.
  EXPECT_TRUE(drain<OpenLane>(s).empty());
}

TEST(SenderMachine, WhenEveryPathGoesAwayTheLastLanesStay) {
  // A single link's blip (carrier lost for a second): closing its lanes
  // would end the transfer; they stay and TCP may ride it out.
  Sender s(sender_config());
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "", "r"}, t0);
  s.add_paths({{LaneKind::tcp, "eth0", "r"}}, t0);
  s.handle_lane_connected(1, LaneTraits::tcp(), t0);
  s.handle_message(1, wire::LaneWelcome{1}, t0);
  drain<CloseLane>(s);
  s.set_paths({}, t0 + Duration::seconds(1), false);
  EXPECT_TRUE(drain<CloseLane>(s).empty());
  EXPECT_EQ(s.open_lanes(), 2u);
  // It returns: nothing is opened twice, nothing closed.
  s.set_paths({{LaneKind::tcp, "eth0", "r"}}, t0 + Duration::seconds(2), true);
  EXPECT_EQ(s.open_lanes(), 2u);
}

TEST(SenderMachine, AFlappingPathOpensOneLanePerReturn) {
  Sender s(sender_config());
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  s.add_paths({{LaneKind::tcp, "a", "r"}}, t0);
  s.handle_lane_connected(1, LaneTraits::tcp(), t0);
  s.handle_message(1, wire::LaneWelcome{1}, t0);
  drain<OpenLane>(s);
  for (int k = 0; k < 50; ++k) {  // a link that flaps all day
    s.set_paths({}, t0 + Duration::seconds(2 * k + 1));
    s.set_paths({{LaneKind::tcp, "a", "r"}}, t0 + Duration::seconds(2 * k + 2));
  }
  // One lane per return (its old slot is taken again), none piling up.
  EXPECT_EQ(drain<OpenLane>(s).size(), 50u);
  EXPECT_EQ(s.lanes().size(), 52u);
}


// ---- probes: discard transfers on some paths, cancelled mid-way ---------------

// The sender cancels (a probe phase is over): the receiver abandons the
// transfer as the sender's choice — no verdict, no failure — and a second
// one is accepted on the same session.
TEST(ReceiverMachine, ACancelledTransferIsAbandonedWithoutAFailure) {
  Receiver r = started_receiver();
  (void)r.poll_action();
  wire::Offer o = offer(1, 64 << 20);
  o.discard = true;
  r.handle_message(0, o, t0);
  ASSERT_EQ(drain<PrepareOffer>(r).size(), 1u);
  r.handle_offer_prepared(1, wire::Accept{1, {}}, t0);
  drain<RecvSendMessage>(r);
  r.handle_piece_verified(0, 1, 0, {0, 1 << 20, {}}, Duration::millis(5), t0);
  r.handle_message(0, wire::Cancel{1, "probe phase over"}, t0 + Duration::seconds(2));
  const auto gone = drain<AbandonTransfer>(r);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_TRUE(gone[0].cancelled);
  EXPECT_FALSE(gone[0].status.has_value());
  ASSERT_TRUE(r.transfer(1).has_value());
  EXPECT_TRUE(r.transfer(1)->cancelled);
  // A piece of it still arriving counts for nothing and is not acked.
  r.handle_piece_verified(0, 1, 1, {1 << 20, 1 << 20, {}}, Duration::millis(5), t0 + Duration::seconds(2));
  EXPECT_TRUE(drain<RecvSendMessage>(r).empty());
  EXPECT_FALSE(r.piece_verified(1, 1));
  // The next transfer on the same session.
  r.handle_message(0, offer(2, 100), t0 + Duration::seconds(3));
  EXPECT_EQ(drain<PrepareOffer>(r).size(), 1u);
  // The session ends: the cancelled transfer is not abandoned again, not a failure.
  r.handle_message(0, wire::Bye{}, t0 + Duration::seconds(4));
  std::vector<AbandonTransfer> again;
  std::vector<SessionEnded> ended;
  while (auto a = r.poll_action()) {
    if (auto* x = std::get_if<AbandonTransfer>(&*a)) again.push_back(*x);
    if (auto* x = std::get_if<SessionEnded>(&*a)) ended.push_back(*x);
  }
  EXPECT_TRUE(again.empty());
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].failures, 0);
}

// A cancel that overtakes the engine's preparation: the transfer is
// abandoned the moment it is prepared instead of waiting accepted forever.
TEST(ReceiverMachine, ACancelBeforeTheAnswerAbandonsTheTransferOnceItIsPrepared) {
  Receiver r = started_receiver();
  (void)r.poll_action();
  r.handle_message(0, offer(1, 100), t0);
  drain<PrepareOffer>(r);
  r.handle_message(0, wire::Cancel{1, "changed my mind"}, t0);
  r.handle_offer_prepared(1, wire::Accept{1, {}}, t0);
  const auto gone = drain<AbandonTransfer>(r);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_TRUE(gone[0].cancelled);
}

TEST(SenderMachine, OnlyTheNamedPathsCarryATransferAndACancelKeepsTheLanes) {
  SenderConfig cfg = sender_config();
  cfg.rate_limit.reset();
  Sender s(cfg);
  const PathSpec boot{LaneKind::tcp, "", "boot"}, a{LaneKind::tcp, "a", "r"}, b{LaneKind::tcp, "b", "r"};
  s.start(LaneTraits::tcp(), boot, t0);
  s.add_paths({a, b}, t0);
  for (LaneNo id : {1u, 2u}) {
    s.handle_lane_connected(id, LaneTraits::tcp(), t0);
    s.handle_message(id, wire::LaneWelcome{id}, t0);
  }
  drain<SendMessage>(s);
  TransferSpec spec;
  wire::ManifestEntry e;
  e.path = "probe";
  e.size = 64 << 20;
  spec.entries = {e};
  spec.discard = true;
  spec.only_paths = std::vector<PathSpec>{b};
  const auto id = s.start_transfer(std::move(spec), t0);
  ASSERT_TRUE(id.has_value());
  auto sent = drain<SendMessage>(s);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(std::get<wire::Offer>(sent[0].msg).discard);
  s.handle_message(sent[0].lane, wire::Accept{*id, {}}, t0 + Duration::millis(1));
  std::set<LaneNo> carried;
  for (const auto& p : drain<SendPiece>(s)) carried.insert(p.lane);
  EXPECT_EQ(carried, std::set<LaneNo>{2});  // lane 2 is path b's; lane 0 and path a's lane 1 carry none
  s.cancel_transfer("probe phase over", t0 + Duration::seconds(2));
  std::vector<TransferEnded> ends;
  std::vector<SendMessage> msgs;
  std::vector<CloseLane> closed;
  while (auto x = s.poll_action()) {
    if (auto* v = std::get_if<TransferEnded>(&*x)) ends.push_back(*v);
    if (auto* v = std::get_if<SendMessage>(&*x)) msgs.push_back(*v);
    if (auto* v = std::get_if<CloseLane>(&*x)) closed.push_back(*v);
  }
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].outcome.end, TransferOutcome::End::cancelled);
  ASSERT_EQ(msgs.size(), 1u);
  EXPECT_EQ(std::get<wire::Cancel>(msgs[0].msg).transfer_id, *id);
  EXPECT_TRUE(closed.empty());
  EXPECT_EQ(s.open_lanes(), 3u);
  // An ack of the cancelled transfer changes nothing; the next transfer
  // (every path) starts at once and lane 1 carries it too.
  s.handle_message(2, wire::Ack{*id, 0, 1000, wire::AckStatus::ok}, t0 + Duration::seconds(2));
  TransferSpec all;
  all.entries = {e};
  all.discard = true;
  const auto next = s.start_transfer(std::move(all), t0 + Duration::seconds(3));
  ASSERT_TRUE(next.has_value());
  sent = drain<SendMessage>(s);
  ASSERT_EQ(sent.size(), 1u);
  s.handle_message(sent[0].lane, wire::Accept{*next, {}}, t0 + Duration::seconds(3));
  carried.clear();
  for (const auto& p : drain<SendPiece>(s)) carried.insert(p.lane);
  EXPECT_EQ(carried, (std::set<LaneNo>{0, 1, 2}));
}

// A lane whose controller starts from a known path's figures (a UDP lane
// of a known peer: LaneTraits::rate_hint) gets work for that rate at once;
// a lane without figures gets one small piece to measure it, as before.
TEST(SenderMachine, ALaneWithAKnownPathsRateIsGivenWorkForItAtOnce) {
  auto bytes_on_lane_1 = [](std::optional<Rate> hint) {
    SenderConfig cfg = sender_config();
    cfg.rate_limit.reset();
    Sender s(cfg);
    s.start(LaneTraits::tcp(Duration::millis(40)), {LaneKind::tcp, "", "boot"}, t0);
    s.add_paths({{LaneKind::tcp, "a", "r"}}, t0);
    LaneTraits traits = LaneTraits::tcp(Duration::millis(40));
    traits.rate_hint = hint;
    s.handle_lane_connected(1, traits, t0);
    s.handle_message(1, wire::LaneWelcome{1}, t0);
    (void)drain<SendMessage>(s);
    TransferSpec spec = one_file(64 << 20);
    spec.discard = true;
    const auto id = s.start_transfer(std::move(spec), t0);
    EXPECT_TRUE(id.has_value());
    for (const auto& m : drain<SendMessage>(s))
      if (std::holds_alternative<wire::Offer>(m.msg)) s.handle_message(m.lane, wire::Accept{*id, {}}, t0 + Duration::millis(1));
    uint64_t on_lane_1 = 0;
    for (const auto& p : drain<SendPiece>(s))
      if (p.lane == 1) on_lane_1 += p.assign.length.count();
    return on_lane_1;
  };
  const uint64_t cold = bytes_on_lane_1(std::nullopt);
  const uint64_t known = bytes_on_lane_1(Rate::mbit(400));
  EXPECT_LE(cold, 64u << 10);  // one probe piece
  // 400 Mbit/s over 40 ms is 2 MB in flight: the lane gets at least that.
  EXPECT_GE(known, 2'000'000u) << cold;
}

// ---- protocol 8: fewer round trips at the start and at the end -------------------

// A further lane takes pieces right behind its join (the welcome is not
// waited for); a refusal on the lane itself, before any welcome, gives it
// up and its pieces go to the other lanes.
TEST(SenderMachine, ALanesPiecesFollowItsJoinAndARefusalTakesThemBack) {
  SenderConfig cfg = sender_config();
  cfg.rate_limit.reset();
  Sender s(cfg);
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "", "boot"}, t0);
  s.add_paths({{LaneKind::tcp, "a", "r"}}, t0);
  TransferSpec spec = one_file(64 << 20);
  const auto id = s.start_transfer(std::move(spec), t0);
  ASSERT_TRUE(id);
  drain<SendMessage>(s);
  s.handle_message(0, wire::Accept{*id, {}}, t0 + Duration::millis(40));
  drain<SendPiece>(s);
  const Time t1 = t0 + Duration::millis(41);
  s.handle_lane_connected(1, LaneTraits::tcp(), t1);
  bool join_first = false, piece_after_join = false;
  while (auto a = s.poll_action()) {
    if (auto* m = std::get_if<SendMessage>(&*a); m && m->lane == 1)
      join_first = !piece_after_join && std::holds_alternative<wire::LaneJoin>(m->msg);
    if (auto* p = std::get_if<SendPiece>(&*a); p && p->lane == 1) piece_after_join = join_first;
  }
  EXPECT_TRUE(join_first);
  EXPECT_TRUE(piece_after_join);  // in the same instant, behind the join
  EXPECT_EQ(s.open_lanes(), 2u);
  s.handle_message(1, wire::LaneClosed{1, "the receiver takes at most 1 lanes per session"}, t1 + Duration::millis(40));
  size_t to_lane0 = 0;
  while (auto a = s.poll_action())
    if (auto* p = std::get_if<SendPiece>(&*a)) to_lane0 += p->lane == 0;
  EXPECT_EQ(s.open_lanes(), 1u);
  s.handle_timeout(t1 + Duration::seconds(60));
  EXPECT_TRUE(drain<OpenLane>(s).empty());  // refused: never again
  // The welcome, had it come, changes nothing for a lane already carrying pieces.
}

// done goes as soon as every piece's hash is known, before the acks; the
// last transfer's goodbye goes right behind it on the same lane.
TEST(SenderMachine, DoneGoesWithTheLastHashAndTheGoodbyeBehindIt) {
  SenderConfig cfg = sender_config();
  cfg.rate_limit.reset();
  Sender s(cfg);
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "", "boot"}, t0);
  TransferSpec spec = one_file(3 << 20);
  spec.last = true;
  const auto id = s.start_transfer(std::move(spec), t0);
  ASSERT_TRUE(id);
  drain<SendMessage>(s);
  s.handle_message(0, wire::Accept{*id, {}}, t0);
  // Each piece sent and hashed, and acked — all but the last: done goes the
  // moment its hash is known, with the piece still unacked.
  Time now = t0;
  std::deque<SendPiece> todo;
  std::vector<SendMessage> msgs;
  const auto poll = [&] {
    while (auto a = s.poll_action()) {
      if (auto* p = std::get_if<SendPiece>(&*a)) todo.push_back(*p);
      if (auto* m = std::get_if<SendMessage>(&*a)) msgs.push_back(*m);
    }
  };
  poll();
  bool done_seen = false;
  for (int k = 0; k < 64 && !done_seen && !todo.empty(); ++k) {
    const SendPiece p = todo.front();
    todo.pop_front();
    now = now + Duration::millis(1);
    s.handle_piece_started(p.lane, p.assign.piece, now);
    s.handle_piece_hashed(p.lane, p.assign.piece, wire::Digest{{static_cast<uint8_t>(p.assign.piece)}, 16}, now);
    s.handle_piece_written(p.lane, p.assign.piece, now);
    poll();
    for (const auto& m : msgs) done_seen = done_seen || std::holds_alternative<wire::Done>(m.msg);
    if (!done_seen) {
      s.handle_message(0, wire::Ack{*id, p.assign.piece, 1000, wire::AckStatus::ok}, now);
      poll();
    }
  }
  ASSERT_GE(msgs.size(), 2u);
  ASSERT_TRUE(std::holds_alternative<wire::Done>(msgs[0].msg));
  EXPECT_TRUE(s.transfer_running());  // the last piece is not acked yet
  EXPECT_EQ(s.all_acked_at(), Time::never());
  const auto* bye = std::get_if<wire::Bye>(&msgs[1].msg);
  ASSERT_NE(bye, nullptr);
  EXPECT_EQ(bye->after_transfer, std::optional<uint32_t>(*id));
  EXPECT_EQ(msgs[1].lane, msgs[0].lane);
  // The verdict ends it; the receiver's lanes closing after it are no news.
  s.handle_message(0, wire::TransferResult{*id, wire::ResultStatus::verified, "verified"}, now + Duration::seconds(5));
  EXPECT_TRUE(s.peer_ends());
  s.handle_lane_failed(0, "closed by the peer (EOF)", true, now + Duration::seconds(5));
  for (const auto& m : drain<SendMessage>(s)) EXPECT_FALSE(std::holds_alternative<wire::LaneClosed>(m.msg));
  EXPECT_EQ(s.open_lanes(), 1u);  // as the verdict found it: the reports show no failure
  s.handle_timeout(now + Duration::seconds(30));
  EXPECT_TRUE(drain<OpenLane>(s).empty());  // and no path is opened again for them
}

// A resumed transfer whose held ranges the check rejected sends them again:
// the receiver counts its stale ranges until those pieces arrive, so done
// waits for the last ack there (else the root could be checked over them).
TEST(SenderMachine, DoneWaitsForTheLastAckWhenHeldRangesAreSentAgain) {
  SenderConfig cfg = sender_config();
  cfg.rate_limit.reset();
  Sender s(cfg);
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "", "boot"}, t0);
  TransferSpec spec = one_file(2 << 20);
  spec.last = true;
  const auto id = s.start_transfer(std::move(spec), t0);
  ASSERT_TRUE(id);
  drain<SendMessage>(s);
  wire::Accept acc{*id, {}};
  acc.held = {wire::HeldRange{0, 1 << 20, wire::Digest{{9}, 16}}};
  s.handle_message(0, acc, t0);
  ASSERT_EQ(drain<CheckHeld>(s).size(), 1u);
  s.handle_held_checked(*id, {}, 1 << 20, t0);  // its bytes changed: sent again
  std::deque<SendPiece> todo;
  std::vector<SendMessage> msgs;
  const auto poll = [&] {
    while (auto a = s.poll_action()) {
      if (auto* p = std::get_if<SendPiece>(&*a)) todo.push_back(*p);
      if (auto* m = std::get_if<SendMessage>(&*a)) msgs.push_back(*m);
    }
  };
  poll();
  std::vector<SendPiece> sent;
  Time now = t0;
  for (int k = 0; k < 64 && !todo.empty(); ++k) {
    const SendPiece p = todo.front();
    todo.pop_front();
    now = now + Duration::millis(1);
    s.handle_piece_started(p.lane, p.assign.piece, now);
    s.handle_piece_hashed(p.lane, p.assign.piece, wire::Digest{{static_cast<uint8_t>(p.assign.piece)}, 16}, now);
    s.handle_piece_written(p.lane, p.assign.piece, now);
    sent.push_back(p);
    poll();
    for (const auto& m : msgs) EXPECT_FALSE(std::holds_alternative<wire::Done>(m.msg)) << "done before the last ack";
    s.handle_message(0, wire::Ack{*id, p.assign.piece, 1000, wire::AckStatus::ok}, now);
    poll();
  }
  ASSERT_GE(sent.size(), 2u);
  bool done = false;
  for (const auto& m : msgs) done = done || std::holds_alternative<wire::Done>(m.msg);
  EXPECT_TRUE(done);
}

// The receiver holds an early done until the last bytes are in (its
// patience counts from the last piece verified), answers, and — the goodbye
// having come with done — ends its session right behind the result.
TEST(ReceiverMachine, AnEarlyDoneIsHeldAndTheSessionEndsBehindTheResult) {
  Receiver r = started_receiver();
  (void)r.poll_action();  // addresses
  r.handle_message(0, offer(1, 2 << 20), t0);
  r.handle_offer_prepared(1, wire::Accept{1, {}}, t0);
  drain<RecvSendMessage>(r);
  const PieceRecord a{0, 1 << 20, wire::Digest{{1}, 16}}, b{1 << 20, 1 << 20, wire::Digest{{2}, 16}};
  r.handle_piece_verified(0, 1, 0, a, Duration::millis(1), t0);
  r.handle_message(0, wire::Done{1, fake_root(wire::HashAlgo::xxh3_128, {a, b})}, t0);
  r.handle_message(0, wire::Bye{1}, t0);
  EXPECT_FALSE(r.ended());
  EXPECT_TRUE(drain<FinalizeTransfer>(r).empty());
  // done_wait is 2 s here: a piece at 1.5 s and another at 3 s keep it alive.
  r.handle_timeout(t0 + Duration::millis(1500));
  EXPECT_TRUE(drain<AbandonTransfer>(r).empty());
  r.handle_piece_verified(0, 1, 1, b, Duration::millis(1), t0 + Duration::millis(3000));
  ASSERT_EQ(drain<FinalizeTransfer>(r).size(), 1u);
  r.handle_finalized(1, wire::ResultStatus::verified, "verified", t0 + Duration::millis(3001));
  bool result = false, closed_after = false;
  while (auto x = r.poll_action()) {
    if (auto* m = std::get_if<RecvSendMessage>(&*x)) result = result || std::holds_alternative<wire::TransferResult>(m->msg);
    if (auto* c = std::get_if<RecvCloseLane>(&*x)) closed_after = result && c->lane == 0 && c->drain;
  }
  EXPECT_TRUE(result);
  EXPECT_TRUE(closed_after);
  EXPECT_TRUE(r.ended());
}

// A goodbye with done that comes after the verdict went ends the session at once.
TEST(ReceiverMachine, AGoodbyeForATransferThatHasItsVerdictEndsAtOnce) {
  Receiver r = started_receiver();
  (void)r.poll_action();
  r.handle_message(0, offer(1, 1 << 20), t0);
  r.handle_offer_prepared(1, wire::Accept{1, {}}, t0);
  const PieceRecord a{0, 1 << 20, wire::Digest{{1}, 16}};
  r.handle_piece_verified(0, 1, 0, a, Duration::millis(1), t0);
  r.handle_message(0, wire::Done{1, fake_root(wire::HashAlgo::xxh3_128, {a})}, t0);
  r.handle_finalized(1, wire::ResultStatus::verified, "verified", t0);
  EXPECT_FALSE(r.ended());
  r.handle_message(0, wire::Bye{1}, t0);
  EXPECT_TRUE(r.ended());
}

}  // namespace
}  // namespace braid::session
