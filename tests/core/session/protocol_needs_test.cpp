// An older receiver meets an offer it cannot read (protocol 8: the receiver
// says its protocol in its addresses): the sender says which feature and
// which version, in one line, before it sends anything — the wire parts
// alone, then the two session machines in virtual time with a receiver
// faking an older protocol.
#include <gtest/gtest.h>

#include <string>

#include "core/session/receiver.hpp"
#include "core/session/sender.hpp"
#include "machine_actions.hpp"
#include "core/wire/protocol_needs.hpp"

namespace braid::session {
namespace {

const Time t0 = Time::zero();

wire::ManifestEntry file(const std::string& path, uint64_t size) {
  wire::ManifestEntry f;
  f.path = path;
  f.size = size;
  return f;
}

using test::drain;
using test::only;
using test::poll_all;

/// What an offer with owners (-o) to a receiver of protocol 6 ends in.
const std::string kOwnersNeedSeven =
    "the receiver speaks braid protocol 6, and -o (owners) needs protocol 7: update braid on the receiver, or send "
    "without -o";

TEST(ProtocolNeeds, TheReceiversProtocolRidesInItsAddressesAsATokenNoAddressParsesAs) {
  wire::Addresses a{{"10.0.0.2:7878", "[fe80::1%eth0]:7878"}, 8};
  const auto bytes = wire::encode_message(a);
  wire::Addresses back;
  ASSERT_TRUE(wire::decode(std::span(bytes).subspan(0), back));
  EXPECT_EQ(back, a);
  EXPECT_EQ(wire::peer_protocol(back), (wire::PeerProtocol{8, true}));
  // A receiver of protocol 7 or older says nothing: "7 or older".
  wire::Addresses old{{"10.0.0.2:7878"}, 0};
  ASSERT_TRUE(wire::decode(wire::encode_message(old), back));
  EXPECT_EQ(back.protocol, 0u);
  EXPECT_EQ(wire::peer_protocol(back), (wire::PeerProtocol{7, false}));
  EXPECT_EQ(wire::peer_protocol(back).text(), "7 or older");
  // Twice, or not a plain number: malformed.
  for (const char* bad : {"braid-protocol=", "braid-protocol=08", "braid-protocol=x", "braid-protocol=1234567890"}) {
    wire::Addresses m{{"10.0.0.2:7878", bad}, 0};
    EXPECT_FALSE(wire::decode(wire::encode_message(m), back)) << bad;
  }
  wire::Addresses twice{{"braid-protocol=8"}, 8};
  EXPECT_FALSE(wire::decode(wire::encode_message(twice), back));
  wire::Addresses first{{"braid-protocol=8", "10.0.0.2:7878"}, 0};  // only last: one encoding per message
  EXPECT_FALSE(wire::decode(wire::encode_message(first), back));
  // A full list keeps its room for the token.
  wire::Addresses full;
  for (int i = 0; i < 70; ++i) full.endpoints.push_back("10.0.0." + std::to_string(i) + ":7878");
  full.protocol = 8;
  ASSERT_TRUE(wire::decode(wire::encode_message(full), back));
  EXPECT_EQ(back.endpoints.size(), wire::kMaxAddresses - 1);
  EXPECT_EQ(back.protocol, 8u);
}

TEST(ProtocolNeeds, EachFeatureNamesTheProtocolItNeeds) {
  wire::Offer o;
  o.entries = {file("a", 10)};
  EXPECT_EQ(wire::offer_needs(o, o.entries, false).version, 0u);
  o.sync.sync = true;
  EXPECT_EQ(wire::offer_needs(o, o.entries, false).version, 4u);
  EXPECT_EQ(wire::offer_needs(o, o.entries, true).version, 6u);
  o.entries[0].data = std::vector<wire::DataRange>{{0, 5}};
  EXPECT_EQ(wire::offer_needs(o, o.entries, false).feature, "-S (sparse files)");
  o.entries[0].owner = wire::OwnerId{1000, "ann"};
  EXPECT_EQ(wire::offer_needs(o, o.entries, false).version, 7u);
  EXPECT_EQ(wire::offer_needs(o, o.entries, false).feature, "-o (owners)");
  o.sync.backup_dir = "old";
  EXPECT_EQ(wire::offer_needs(o, o.entries, false).version, 8u);
  EXPECT_EQ(wire::offer_needs(o, o.entries, false).feature, "--backup-dir");
  // A receiver that speaks enough: nothing to say.
  EXPECT_EQ(wire::too_old(wire::offer_needs(o, o.entries, false), {8, true}), "");
  // One that does not say may take what protocol 7 has: sent as before.
  o.sync.backup_dir.clear();
  EXPECT_EQ(wire::too_old(wire::offer_needs(o, o.entries, false), {7, false}), "");
  EXPECT_EQ(wire::too_old(wire::offer_needs(o, o.entries, false), {6, true}), kOwnersNeedSeven);
}

TEST(ProtocolNeeds, TheBackupOptionsCrossOnlyWhenAsked) {
  wire::Offer o;
  o.transfer_id = 3;
  o.chunk_size = 1 << 20;
  o.entries = {file("a", 10)};
  o.sync.sync = true;
  const auto plain = wire::encode_message(o);
  o.sync.backup_suffix = "~";
  o.sync.backup_dir = "old";
  const auto with = wire::encode_message(o);
  EXPECT_GT(with.size(), plain.size());
  wire::Offer back;
  ASSERT_TRUE(wire::decode(with, back));
  EXPECT_EQ(back.sync, o.sync);
  ASSERT_TRUE(wire::decode(plain, back));
  EXPECT_FALSE(back.sync.backup());
  o.sync.backup_suffix = "a/b";  // a suffix never makes a path
  EXPECT_FALSE(wire::decode(wire::encode_message(o), back));
}

/// Sender and receiver machines, lane 0 only, the receiver saying `protocol`
/// (0: nothing, as one of protocol 7 or older).
struct Pair {
  Receiver r;
  Sender s;
  explicit Pair(uint32_t protocol)
      : r([&] {
          ReceiverConfig c;
          c.protocol = protocol;
          return c;
        }()),
        s([&] {
          r.start(LaneTraits::tcp(), t0);
          // The engine reads lane 0's first frame, the receiver's addresses,
          // before it starts the sender's machine.
          const auto first = drain<RecvSendMessage>(r);
          EXPECT_EQ(first.size(), 1u);
          wire::Addresses a;
          EXPECT_TRUE(wire::decode(wire::encode_message(std::get<wire::Addresses>(first.at(0).msg)), a));
          SenderConfig c;
          c.peer = wire::peer_protocol(a);
          return c;
        }()) {
    s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  }
};

TEST(ProtocolNeedsSession, AnOlderReceiverHearsNothingAndTheUserOneLine) {
  Pair pair(6);
  TransferSpec spec;
  spec.entries = {file("a", 1000)};
  spec.entries[0].owner = wire::OwnerId{0, "root"};
  ASSERT_TRUE(pair.s.start_transfer(std::move(spec), t0));
  const auto actions = poll_all(pair.s);
  for (const auto& m : only<SendMessage>(actions)) EXPECT_FALSE(std::holds_alternative<wire::Offer>(m.msg));
  const auto ended = only<TransferEnded>(actions);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].outcome.end, TransferOutcome::End::unsupported);
  EXPECT_EQ(ended[0].outcome.message, kOwnersNeedSeven);
  // The session goes on: an offer the receiver can take is sent.
  TransferSpec plain;
  plain.entries = {file("b", 1000)};
  ASSERT_TRUE(pair.s.start_transfer(std::move(plain), t0 + Duration::millis(1)));
  const auto sent = drain<SendMessage>(pair.s);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<wire::Offer>(sent[0].msg));
}

TEST(ProtocolNeedsSession, AReceiverThatSaysNothingIsSevenOrOlderForABackup) {
  Pair pair(0);
  TransferSpec spec;
  spec.entries = {file("a", 1000)};
  spec.sync.sync = true;
  spec.sync.backup_suffix = "~";
  ASSERT_TRUE(pair.s.start_transfer(std::move(spec), t0));
  const auto ended = drain<TransferEnded>(pair.s);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].outcome.end, TransferOutcome::End::unsupported);
  EXPECT_NE(ended[0].outcome.message.find("protocol 7 or older, and --backup-suffix needs protocol 8"),
            std::string::npos)
      << ended[0].outcome.message;
}

TEST(ProtocolNeedsSession, LanesJoinAnOlderReceiverWithItsVersionAndItTakesThem) {
  Pair pair(0);  // a receiver of protocol 7 checks joins against its own 7
  pair.s.add_paths({{LaneKind::tcp, "a", "a"}}, t0);
  pair.s.handle_lane_connected(1, LaneTraits::tcp(), t0);
  std::optional<wire::LaneJoin> join;
  for (const auto& m : drain<SendMessage>(pair.s))
    if (auto* j = std::get_if<wire::LaneJoin>(&m.msg)) join = *j;
  ASSERT_TRUE(join);
  EXPECT_EQ(join->version, wire::kLastSilentProtocol);
  // The same machine with its own protocol: the version it would say.
  Pair same(wire::kProtocolVersion);
  same.s.add_paths({{LaneKind::tcp, "a", "a"}}, t0);
  same.s.handle_lane_connected(1, LaneTraits::tcp(), t0);
  for (const auto& m : drain<SendMessage>(same.s))
    if (auto* j = std::get_if<wire::LaneJoin>(&m.msg)) {
      EXPECT_EQ(j->version, wire::kProtocolVersion);
    }
  // And a receiver of this protocol takes that join.
  EXPECT_TRUE(same.r.handle_lane_connected(1, LaneTraits::tcp(), t0));
  same.r.handle_message(1, wire::LaneJoin{wire::kProtocolVersion, 1}, t0);
  EXPECT_TRUE(same.r.lane_joined(1));
  // So does one of protocol 7 (a sender that knows nothing of 8 sends none of it); 6 is refused.
  EXPECT_TRUE(same.r.handle_lane_connected(2, LaneTraits::tcp(), t0));
  same.r.handle_message(2, wire::LaneJoin{7, 2}, t0);
  EXPECT_TRUE(same.r.lane_joined(2));
  EXPECT_TRUE(same.r.handle_lane_connected(3, LaneTraits::tcp(), t0));
  same.r.handle_message(3, wire::LaneJoin{6, 3}, t0);
  EXPECT_FALSE(same.r.lane_joined(3));
}

// A join newer than the receiver is refused, and said so on the lane: the
// sender's lane closes with the two versions, not with a bare EOF.
TEST(ProtocolNeedsSession, AJoinNewerThanTheReceiverIsRefusedInOneLineOnTheLane) {
  Pair pair(0);  // says nothing: protocol 7 or older
  ASSERT_TRUE(pair.r.handle_lane_connected(1, LaneTraits::tcp(), t0));
  pair.r.handle_message(1, wire::LaneJoin{wire::kProtocolVersion, 1}, t0);
  EXPECT_FALSE(pair.r.lane_joined(1));
  std::optional<wire::LaneClosed> said;
  for (const auto& m : drain<RecvSendMessage>(pair.r))
    if (auto* c = std::get_if<wire::LaneClosed>(&m.msg); c && m.lane == 1) said = *c;
  ASSERT_TRUE(said);
  const std::string line = "join refused: the lane says braid protocol " + std::to_string(wire::kProtocolVersion) +
                           " and this receiver speaks 7 to 7";
  EXPECT_EQ(said->reason, line);
  // The sender's lane, joining with that version, hears it.
  SenderConfig c;
  Sender s(c);
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  s.add_paths({{LaneKind::tcp, "a", "a"}}, t0);
  s.handle_lane_connected(1, LaneTraits::tcp(), t0);
  (void)drain<SendMessage>(s);
  s.handle_message(1, *said, t0 + Duration::millis(1));
  std::vector<std::string> notes;
  while (auto a = s.poll_action())
    if (auto* n = std::get_if<Note>(&*a); n && n->lane == 1) notes.push_back(n->event + ": " + n->detail);
  EXPECT_NE(std::find(notes.begin(), notes.end(), "lane_failed: refused by the receiver: " + line), notes.end())
      << ::testing::PrintToString(notes);
}

// An offer made in TLS's last flight goes on the protocol the receiver spoke
// last time; its addresses may then say an older one (braid was downgraded
// there). The transfer ends in the one line start_transfer would have said,
// and lanes join with the version heard.
TEST(ProtocolNeedsSession, AnEarlyOfferToAReceiverThatTurnsOutOlderEndsInOneLineAndLanesJoinWithItsVersion) {
  SenderConfig c;
  c.peer = {wire::kProtocolVersion, true};  // remembered
  Sender s(c);
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  TransferSpec spec;
  spec.entries = {file("a", 1000)};
  spec.entries[0].owner = wire::OwnerId{0, "root"};
  ASSERT_TRUE(s.start_transfer(std::move(spec), t0));
  const auto offered = drain<SendMessage>(s);
  ASSERT_EQ(offered.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<wire::Offer>(offered[0].msg));
  s.handle_peer_protocol({6, true}, t0 + Duration::millis(1));
  const auto ended = drain<TransferEnded>(s);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].outcome.end, TransferOutcome::End::unsupported);
  EXPECT_EQ(ended[0].outcome.message, kOwnersNeedSeven);
  s.add_paths({{LaneKind::tcp, "a", "a"}}, t0 + Duration::millis(2));
  s.handle_lane_connected(1, LaneTraits::tcp(), t0 + Duration::millis(2));
  std::optional<wire::LaneJoin> join;
  for (const auto& m : drain<SendMessage>(s))
    if (auto* j = std::get_if<wire::LaneJoin>(&m.msg)) join = *j;
  ASSERT_TRUE(join);
  EXPECT_EQ(join->version, 6u);
}

// The receiver turned out newer, or older but able to take the offer: the
// transfer goes on as offered.
TEST(ProtocolNeedsSession, AnEarlyOfferTheReceiverCanTakeGoesOnWhateverItTurnsOutToSpeak) {
  for (const wire::PeerProtocol heard : {wire::PeerProtocol{wire::kProtocolVersion, true}, wire::PeerProtocol{7, false}}) {
    SenderConfig c;
    c.peer = {7, false};
    Sender s(c);
    s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
    TransferSpec spec;
    spec.entries = {file("a", 1000)};
    ASSERT_TRUE(s.start_transfer(std::move(spec), t0));
    s.handle_peer_protocol(heard, t0 + Duration::millis(1));
    EXPECT_TRUE(s.transfer_running()) << heard.text();
    EXPECT_TRUE(drain<TransferEnded>(s).empty()) << heard.text();
  }
}

}  // namespace
}  // namespace braid::session
