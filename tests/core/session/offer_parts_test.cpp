// An offer in parts (protocol 6): a manifest too big for one frame is cut by
// the sender (wire::split_offer) and put together by the receiver
// (wire::append_offer_part) — the wire functions alone, then the two
// session machines message by message; and a streamed offer (the sender's
// parts go while it still walks the tree: TransferSpec::streamed).
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

#include "core/session/receiver.hpp"
#include "core/session/sender.hpp"
#include "core/wire/protocol_needs.hpp"
#include "machine_actions.hpp"

namespace braid::session {
namespace {

const Time t0 = Time::zero();
constexpr size_t kFrameLimit = 16u << 20;  // engine/security/frame_format.h's kMaxFramePayload

/// `n` entries in directories of 100: names of ~40 bytes, like a real tree.
std::vector<wire::ManifestEntry> tree(size_t n) {
  std::vector<wire::ManifestEntry> out;
  for (size_t i = 0; i < n; ++i) {
    if (i % 100 == 0) {
      wire::ManifestEntry d;
      d.kind = wire::EntryKind::directory;
      d.path = "photos-2024/album-" + std::to_string(i / 100);
      out.push_back(d);
    }
    wire::ManifestEntry f;
    f.path = "photos-2024/album-" + std::to_string(i / 100) + "/IMG_" + std::to_string(100000 + i) + ".jpg";
    f.size = i % 7;
    f.mtime_sec = 1700000000 + static_cast<int64_t>(i);
    out.push_back(f);
  }
  return out;
}

wire::Offer offer_of(std::vector<wire::ManifestEntry> entries) {
  wire::Offer o;
  o.transfer_id = 7;
  o.chunk_size = 1 << 20;
  o.entries = std::move(entries);
  return o;
}

TEST(OfferParts, ATreeTooBigForOneFrameGoesInPartsEachWellInsideAFrame) {
  const wire::Offer whole = offer_of(tree(400'000));
  // One frame could not carry it: the old limit.
  EXPECT_GT(wire::encode_message(whole).size(), kFrameLimit);
  const wire::SplitOffer split = wire::split_offer(whole);
  ASSERT_TRUE(split.head.continued);
  ASSERT_GT(split.parts.size(), 10u);
  EXPECT_LE(wire::encode_message(split.head).size(), wire::kOfferPartBytes + 64);
  wire::Offer put_together;
  ASSERT_TRUE(wire::decode(wire::encode_message(split.head), put_together));
  bool complete = false;
  for (size_t i = 0; i < split.parts.size(); ++i) {
    const auto bytes = wire::encode_message(split.parts[i]);
    EXPECT_LE(bytes.size(), wire::kOfferPartBytes + 64) << "part " << i;
    wire::OfferPart p;
    ASSERT_TRUE(wire::decode(bytes, p));
    EXPECT_EQ(p.last, i + 1 == split.parts.size());
    ASSERT_EQ(wire::append_offer_part(put_together, p, complete), "");
    EXPECT_EQ(complete, p.last);
  }
  EXPECT_FALSE(put_together.continued);
  EXPECT_EQ(put_together.entries, whole.entries);
  EXPECT_EQ(put_together.total_bytes(), whole.total_bytes());
}

TEST(OfferParts, ASmallOfferIsOneFrameAsBefore) {
  const wire::SplitOffer split = wire::split_offer(offer_of(tree(50)));
  EXPECT_FALSE(split.head.continued);
  EXPECT_TRUE(split.parts.empty());
  EXPECT_EQ(split.head.entries.size(), 51u);
}

TEST(OfferParts, APartSentAgainChangesNothingAndAGapOrAForeignPartIsRefused) {
  const wire::SplitOffer split = wire::split_offer(offer_of(tree(1000)), 4096);
  ASSERT_GE(split.parts.size(), 3u);
  wire::Offer o = split.head;
  bool complete = false;
  EXPECT_NE(wire::append_offer_part(o, split.parts[1], complete), "");  // part 0 not here yet
  ASSERT_EQ(wire::append_offer_part(o, split.parts[0], complete), "");
  const size_t have = o.entries.size();
  EXPECT_EQ(wire::append_offer_part(o, split.parts[0], complete), "");  // again: ignored
  EXPECT_EQ(o.entries.size(), have);
  wire::OfferPart other = split.parts[1];
  other.transfer_id = 8;
  EXPECT_NE(wire::append_offer_part(o, other, complete), "");
  EXPECT_EQ(o.entries.size(), have);
  EXPECT_FALSE(complete);
}

TEST(OfferParts, AHardLinkToAnEarlierPartMustNameAFile) {
  wire::Offer o = offer_of(tree(10));  // entry 0 is a directory, entry 1 a file
  o.continued = true;
  wire::OfferPart p;
  p.transfer_id = 7;
  p.first_entry = static_cast<uint32_t>(o.entries.size());
  p.last = true;
  wire::ManifestEntry link;
  link.path = "photos-2024/album-0/another-name.jpg";
  link.hard_link_to = 0;
  p.entries = {link};
  bool complete = false;
  wire::Offer bad = o;
  EXPECT_NE(wire::append_offer_part(bad, p, complete), "");  // a link to a directory
  p.entries[0].hard_link_to = 1;
  // Through the wire: a link may name an entry of an earlier part.
  wire::OfferPart decoded;
  ASSERT_TRUE(wire::decode(wire::encode_message(p), decoded));
  EXPECT_EQ(wire::append_offer_part(o, decoded, complete), "");
  EXPECT_TRUE(complete);
  EXPECT_EQ(o.entries.back().hard_link_to, std::optional<uint32_t>(1));
}

wire::Digest fake_root(wire::HashAlgo, std::vector<PieceRecord>) {
  wire::Digest d;
  d.size = 16;
  return d;
}

using test::drain;

/// Sender and receiver machines with lanes 0 and 1 joined and open.
struct Pair {
  Sender s{[] {
    SenderConfig c;
    c.root_hash = fake_root;
    return c;
  }()};
  Receiver r{[] {
    ReceiverConfig c;
    c.root_hash = fake_root;
    return c;
  }()};
  Pair() {
    s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
    s.add_paths({{LaneKind::tcp, "a", "a"}}, t0);
    s.handle_lane_connected(1, LaneTraits::tcp(), t0);
    s.handle_message(1, wire::LaneWelcome{1}, t0);
    drain<SendMessage>(s);
    r.start(LaneTraits::tcp(), t0);
    EXPECT_TRUE(r.handle_lane_connected(1, LaneTraits::tcp(), t0));
    r.handle_message(1, wire::LaneJoin{wire::kProtocolVersion, 1}, t0);
    drain<RecvSendMessage>(r);
  }
  /// Hands each message to the receiver; the PrepareOffers it asked for.
  std::vector<PrepareOffer> deliver(const std::vector<SendMessage>& msgs, size_t first = 0, size_t count = SIZE_MAX) {
    std::vector<PrepareOffer> prepared;
    for (size_t i = first; i < msgs.size() && i - first < count; ++i) {
      std::visit([&](const auto& m) { r.handle_message(msgs[i].lane, m, t0); }, msgs[i].msg);
      for (auto& p : drain<PrepareOffer>(r)) prepared.push_back(std::move(p));
    }
    return prepared;
  }
};

TEST(OfferPartsSession, TheReceiverPreparesTheWholeOfferOnceItsLastPartIsIn) {
  Pair pair;
  TransferSpec spec;
  const auto entries = tree(150'000);
  spec.entries = entries;
  const auto id = pair.s.start_transfer(std::move(spec), t0);
  ASSERT_TRUE(id);
  const auto sent = drain<SendMessage>(pair.s);
  ASSERT_GT(sent.size(), 3u);
  ASSERT_TRUE(std::holds_alternative<wire::Offer>(sent[0].msg));
  EXPECT_TRUE(std::get<wire::Offer>(sent[0].msg).continued);
  for (size_t i = 1; i < sent.size(); ++i) {
    ASSERT_TRUE(std::holds_alternative<wire::OfferPart>(sent[i].msg)) << i;
    EXPECT_EQ(sent[i].lane, sent[0].lane);  // in order, on one lane
  }
  // Nothing is prepared until the last part is in.
  EXPECT_TRUE(pair.deliver(sent, 0, sent.size() - 1).empty());
  const auto prepared = pair.deliver(sent, sent.size() - 1);
  ASSERT_EQ(prepared.size(), 1u);
  EXPECT_EQ(prepared[0].offer->entries, entries);
  EXPECT_FALSE(prepared[0].offer->continued);
  EXPECT_EQ(pair.r.transfer(*id)->total, prepared[0].offer->total_bytes());
  // The answer reaches the sender, which sends pieces and never the parts again.
  pair.r.handle_offer_prepared(*id, wire::Accept{*id, {}}, t0);
  for (const auto& m : drain<RecvSendMessage>(pair.r))
    std::visit([&](const auto& x) { pair.s.handle_message(m.lane, x, t0); }, m.msg);
  std::vector<SendPiece> pieces;
  std::vector<SendMessage> more;
  while (auto a = pair.s.poll_action()) {
    if (auto* p = std::get_if<SendPiece>(&*a)) pieces.push_back(*p);
    if (auto* m = std::get_if<SendMessage>(&*a)) more.push_back(*m);
  }
  EXPECT_FALSE(pieces.empty());
  for (const auto& m : more) EXPECT_FALSE(std::holds_alternative<wire::OfferPart>(m.msg));
  pair.s.handle_timeout(t0 + Duration::seconds(30));
  for (const auto& m : drain<SendMessage>(pair.s)) EXPECT_FALSE(std::holds_alternative<wire::OfferPart>(m.msg));
}

TEST(OfferPartsSession, ALaneLostMidOfferSendsItAgainWholeAndTheReceiverPreparesItOnce) {
  Pair pair;
  TransferSpec spec;
  const auto entries = tree(60'000);
  spec.entries = entries;
  const auto id = pair.s.start_transfer(std::move(spec), t0);
  ASSERT_TRUE(id);
  const auto first = drain<SendMessage>(pair.s);
  ASSERT_GT(first.size(), 2u);
  // Half the parts arrive, then their lane dies: all of it goes again on the other lane.
  EXPECT_TRUE(pair.deliver(first, 0, first.size() / 2).empty());
  const LaneNo dead = first[0].lane;
  pair.s.handle_lane_failed(dead, "reset", true, t0 + Duration::millis(5));
  pair.r.handle_lane_failed(dead, "reset", t0 + Duration::millis(5));
  const auto again = drain<SendMessage>(pair.s);
  std::vector<SendMessage> offer_msgs;
  for (const auto& m : again)
    if (std::holds_alternative<wire::Offer>(m.msg) || std::holds_alternative<wire::OfferPart>(m.msg))
      offer_msgs.push_back(m);
  ASSERT_EQ(offer_msgs.size(), first.size());
  for (const auto& m : offer_msgs) EXPECT_NE(m.lane, dead);
  const auto prepared = pair.deliver(offer_msgs);
  ASSERT_EQ(prepared.size(), 1u);
  EXPECT_EQ(prepared[0].offer->entries, entries);
}

// ---- a streamed offer: parts go while the sender still walks -----------------

/// The sender walks `entries` in batches of `batch`, one batch per
/// millisecond of virtual time, reading them in place from `walked` (the
/// engine's source tree) as add_entries says; each message it sends is
/// handed to the receiver at once. Returns when the walk is over.
struct StreamedWalk {
  explicit StreamedWalk(Pair& p) : pair(p) {}
  Pair& pair;
  std::vector<wire::ManifestEntry> walked;  // the caller's tree, growing
  std::vector<SendMessage> sent;
  std::vector<PrepareOffer> prepared;
  std::vector<Time> part_times;  // when each offer frame went
  std::optional<uint32_t> id;
  Time now = t0;

  void take(bool deliver) {
    for (auto& m : drain<SendMessage>(pair.s)) {
      if (std::holds_alternative<wire::Offer>(m.msg) || std::holds_alternative<wire::OfferPart>(m.msg))
        part_times.push_back(now);
      sent.push_back(m);
      if (deliver) {
        std::visit([&](const auto& x) { pair.r.handle_message(m.lane, x, now); }, m.msg);
        for (auto& p : drain<PrepareOffer>(pair.r)) prepared.push_back(std::move(p));
      }
    }
  }
  void run(const std::vector<wire::ManifestEntry>& entries, size_t batch, bool deliver = true,
           size_t stop_after = SIZE_MAX) {
    TransferSpec spec;
    spec.streamed = true;
    spec.entries_in_place = &walked;
    id = pair.s.start_transfer(std::move(spec), now);
    take(deliver);
    for (size_t at = 0; at < entries.size() && at < stop_after; at += batch) {
      now = now + Duration::millis(1);
      const size_t end = std::min(entries.size(), at + batch);
      walked.insert(walked.end(), entries.begin() + static_cast<ptrdiff_t>(at), entries.begin() + static_cast<ptrdiff_t>(end));
      pair.s.add_entries({}, end == entries.size(), now);
      take(deliver);
    }
  }
};

TEST(StreamedOffer, PartsGoWhileTheWalkRunsAndTheReceiverHoldsMostOfTheOfferBeforeItEnds) {
  Pair pair;
  const auto entries = tree(150'000);  // 151,500 entries of ~70 bytes: 10 frames of 1 MiB
  StreamedWalk w{pair};
  w.run(entries, 1000);  // a walk of 152 ms in virtual time
  ASSERT_TRUE(w.id);
  const Time walk_end = w.now;
  ASSERT_GE(w.part_times.size(), 8u);
  // The head went after the first ~1 MiB of entries, long before the walk ended.
  EXPECT_LT(w.part_times.front(), t0 + Duration::millis(20));
  size_t before_end = 0;
  for (const Time t : w.part_times) before_end += t < walk_end;
  EXPECT_GE(before_end, w.part_times.size() - 2);  // only the last part (or two) waits for the end of the walk
  // Every frame within a frame's room, in order on one lane; the last says so.
  ASSERT_TRUE(std::holds_alternative<wire::Offer>(w.sent[0].msg));
  EXPECT_TRUE(std::get<wire::Offer>(w.sent[0].msg).continued);
  for (size_t i = 1; i < w.sent.size(); ++i) {
    ASSERT_TRUE(std::holds_alternative<wire::OfferPart>(w.sent[i].msg)) << i;
    EXPECT_EQ(w.sent[i].lane, w.sent[0].lane);
    EXPECT_EQ(std::get<wire::OfferPart>(w.sent[i].msg).last, i + 1 == w.sent.size());
    EXPECT_LE(wire::encode_message(std::get<wire::OfferPart>(w.sent[i].msg)).size(), wire::kOfferPartBytes + 64);
  }
  // The receiver prepares it once, whole and exact, after the last part.
  ASSERT_EQ(w.prepared.size(), 1u);
  EXPECT_EQ(w.prepared[0].offer->entries, entries);
  // Accepted, the sender plans the whole tree's bytes and sends pieces.
  pair.r.handle_offer_prepared(*w.id, wire::Accept{*w.id, {}}, w.now);
  for (const auto& m : drain<RecvSendMessage>(pair.r))
    std::visit([&](const auto& x) { pair.s.handle_message(m.lane, x, w.now); }, m.msg);
  ASSERT_NE(pair.s.scheduler(), nullptr);
  EXPECT_EQ(pair.s.scheduler()->plan().total().count(), w.prepared[0].offer->total_bytes());
  EXPECT_FALSE(drain<SendPiece>(pair.s).empty());
}

TEST(StreamedOffer, AWalkThatFitsOneFrameSendsOneWholeOffer) {
  Pair pair;
  StreamedWalk w{pair};
  w.run(tree(300), 100);
  ASSERT_EQ(w.sent.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<wire::Offer>(w.sent[0].msg));
  EXPECT_FALSE(std::get<wire::Offer>(w.sent[0].msg).continued);
  ASSERT_EQ(w.prepared.size(), 1u);
  EXPECT_EQ(w.prepared[0].offer->entries, tree(300));
}

TEST(StreamedOffer, ALaneLostMidWalkSendsWhatWentAgainAndTheRestFollowsOnTheNewLane) {
  Pair pair;
  const auto entries = tree(60'000);
  StreamedWalk w{pair};
  // Most of the walk (3 frames); nothing reaches the receiver yet.
  const size_t stop = 45'000;
  w.run(entries, 1000, false, stop);
  ASSERT_GE(w.sent.size(), 2u);
  const LaneNo dead = w.sent[0].lane;
  const size_t went = w.sent.size();
  // The lane dies: what went goes again on the other lane, and the receiver gets that copy only.
  w.now = w.now + Duration::millis(1);
  pair.s.handle_lane_failed(dead, "reset", true, w.now);
  pair.r.handle_lane_failed(dead, "reset", w.now);
  w.sent.clear();
  w.take(true);
  std::vector<SendMessage> again;
  for (const auto& m : w.sent)
    if (std::holds_alternative<wire::Offer>(m.msg) || std::holds_alternative<wire::OfferPart>(m.msg)) again.push_back(m);
  ASSERT_EQ(again.size(), went);
  for (const auto& m : again) EXPECT_NE(m.lane, dead);
  // The rest of the walk.
  for (size_t at = stop; at < entries.size(); at += 1000) {
    w.now = w.now + Duration::millis(1);
    const size_t end = std::min(entries.size(), at + 1000);
    w.walked.insert(w.walked.end(), entries.begin() + static_cast<ptrdiff_t>(at), entries.begin() + static_cast<ptrdiff_t>(end));
    pair.s.add_entries({}, end == entries.size(), w.now);
    w.take(true);
  }
  for (const auto& m : w.sent) EXPECT_NE(m.lane, dead);
  ASSERT_EQ(w.prepared.size(), 1u);
  EXPECT_EQ(w.prepared[0].offer->entries, entries);
}

TEST(StreamedOffer, AMissingOrTamperedPartIsRefusedAndTheSenderHearsWhy) {
  for (const bool tamper : {false, true}) {
    Pair pair;
    StreamedWalk w{pair};
    w.run(tree(40'000), 1000, false);
    ASSERT_GE(w.sent.size(), 3u);
    // Part 1 is lost (a gap), or its first entry index is changed on the way.
    std::vector<SendMessage> msgs = w.sent;
    if (tamper)
      std::get<wire::OfferPart>(msgs[1].msg).first_entry += 1;
    else
      msgs.erase(msgs.begin() + 1);
    std::vector<RecvSendMessage> answers;
    for (const auto& m : msgs) {
      std::visit([&](const auto& x) { pair.r.handle_message(m.lane, x, w.now); }, m.msg);
      while (auto a = pair.r.poll_action()) {
        EXPECT_FALSE(std::holds_alternative<PrepareOffer>(*a)) << tamper;
        if (auto* x = std::get_if<RecvSendMessage>(&*a)) answers.push_back(*x);
      }
    }
    ASSERT_FALSE(answers.empty());
    ASSERT_TRUE(std::holds_alternative<wire::Refuse>(answers.back().msg));
    EXPECT_EQ(std::get<wire::Refuse>(answers.back().msg).reason, wire::RefuseReason::bad_offer);
    pair.s.handle_message(answers.back().lane, answers.back().msg, w.now);
    const auto ended = drain<TransferEnded>(pair.s);
    ASSERT_EQ(ended.size(), 1u);
    EXPECT_EQ(ended[0].outcome.end, TransferOutcome::End::refused);
  }
}

TEST(StreamedOffer, AnAcceptBeforeTheLastPartIsNotTaken) {
  Pair pair;
  StreamedWalk w{pair};
  w.run(tree(40'000), 1000, false, 20'000);  // the walk is not over
  ASSERT_TRUE(w.id);
  pair.s.handle_message(0, wire::Accept{*w.id, {}}, w.now);
  const auto ended = drain<TransferEnded>(pair.s);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].outcome.end, TransferOutcome::End::peer_error);
  EXPECT_EQ(pair.s.scheduler(), nullptr);
  pair.s.add_entries({}, true, w.now);  // the walk's end changes nothing now
  for (const auto& m : drain<SendMessage>(pair.s)) EXPECT_FALSE(std::holds_alternative<wire::OfferPart>(m.msg));
}


// ---- protocol 9: pieces of accepted parts flow before the last part ----------

TEST(EarlyAnswersWire, TheOfferAsksInAnOptionsByteAndTheAnswerNamesAnEntryCount) {
  wire::Offer o = offer_of(tree(10));
  o.continued = true;
  o.early_answers = true;
  wire::Offer back;
  ASSERT_TRUE(wire::decode(wire::encode_message(o), back));
  EXPECT_TRUE(back.early_answers);
  EXPECT_FALSE(back.sync.backup());
  o.sync.backup_suffix = "~";  // with backup options too
  ASSERT_TRUE(wire::decode(wire::encode_message(o), back));
  EXPECT_TRUE(back.early_answers);
  EXPECT_EQ(back.sync.backup_suffix, "~");
  // Without the ask, the offer is protocol 8's to the byte.
  o.early_answers = false;
  o.sync.backup_suffix.clear();
  wire::Offer plain = o;
  EXPECT_EQ(wire::encode_message(o), wire::encode_message(plain));
  ASSERT_TRUE(wire::decode(wire::encode_message(o), back));
  EXPECT_FALSE(back.early_answers);
  // The ask on an offer that is not continued has no parts to answer: malformed.
  o.early_answers = true;
  o.continued = false;
  EXPECT_FALSE(wire::decode(wire::encode_message(o), back));
  wire::AcceptPart a{7, 12345}, a2;
  ASSERT_TRUE(wire::decode(wire::encode_message(a), a2));
  EXPECT_EQ(a2, a);
  EXPECT_FALSE(wire::decode(wire::encode_message(wire::AcceptPart{7, 0}), a2));  // accepts nothing
}

// Protocol 10: the entries' order is said in bit 1 of the same options
// byte, only beside the ask for early answers; other bits stay refused.
TEST(EarlyAnswersWire, EntriesInPathOrderAreSaidBesideTheAsk) {
  wire::Offer o = offer_of(tree(10));
  o.continued = o.early_answers = o.ordered = true;
  std::vector<uint8_t> bytes = wire::encode_message(o);
  wire::Offer back;
  ASSERT_TRUE(wire::decode(bytes, back));
  EXPECT_TRUE(back.ordered && back.early_answers);
  o.ordered = false;
  ASSERT_TRUE(wire::decode(wire::encode_message(o), back));
  EXPECT_FALSE(back.ordered);
  EXPECT_EQ(wire::encode_message(o).size(), bytes.size());  // the same byte, one bit apart
  // Without the ask there is no options byte to say it in: not sent.
  o.ordered = true;
  o.early_answers = false;
  ASSERT_TRUE(wire::decode(wire::encode_message(o), back));
  EXPECT_FALSE(back.ordered);
  // The options byte is the encoding's last: a bit nobody knows yet is refused.
  bytes.back() |= 8;
  EXPECT_FALSE(wire::decode(bytes, back));
  bytes.back() = 2;  // the order without the ask
  EXPECT_FALSE(wire::decode(bytes, back));
  EXPECT_TRUE(wire::takes_ordered_entries({10, true}));
  EXPECT_FALSE(wire::takes_ordered_entries({9, true}));
  EXPECT_FALSE(wire::takes_ordered_entries({10, false}));
}

/// Order-independent, and any piece missing, extra or moved changes it.
wire::Digest sum_root(wire::HashAlgo, std::vector<PieceRecord> records) {
  uint64_t sum = 0;
  for (const auto& r : records) sum += (r.offset * 31 + r.length * 17 + r.hash.bytes[0] + 1) * 0x9e3779b97f4a7c15ull;
  wire::Digest d;
  d.size = 16;
  for (int i = 0; i < 8; ++i) d.bytes[i] = static_cast<uint8_t>(sum >> (8 * i));
  return d;
}

/// Both machines, the walk, the receiver's engine and the lanes on one
/// virtual clock in steps of 1 ms: a message arrives one step after it is
/// sent; the walk adds 1,000 entries a step; the receiver's engine answers
/// a part `prepare_part` after it is asked and the whole offer (protocol 8)
/// `prepare_whole` after; each lane carries one piece a step (1 MiB/ms).
struct EarlyRun {
  struct Options {
    bool receiver_early = true;        // ReceiverConfig::early_answers
    uint32_t receiver_protocol = wire::kProtocolVersion;
    bool sender_early = true;          // TransferSpec::early_pieces
    Duration prepare_part = Duration::millis(2);
    Duration prepare_whole = Duration::millis(20);
    /// The engine refuses the part that would take the accepted bytes past this (no_space).
    uint64_t disk_bytes = UINT64_MAX;
    /// The lane the offer went on dies at this time.
    Time kill_offer_lane_at = Time::never();
    /// SenderConfig::offer_part_bytes: smaller, more parts.
    size_t offer_part_bytes = wire::kOfferPartBytes;
    /// As the engine's streamed walk (kWalkWindow): before each batch the
    /// entries before Sender::entries_needed_from() are erased, and the
    /// batch waits while walk_should_wait(…, window). 0: every entry stays.
    size_t window = 0;
    /// SenderConfig::answer_timeout.
    Duration answer_timeout = Duration::seconds(300);
    /// TransferSpec::ordered: the walk is in path order, with no hard link.
    bool ordered = true;
  };
  explicit EarlyRun(Options o)
      : opt(o),
        s([&] {
          SenderConfig c;
          c.root_hash = sum_root;
          c.peer = wire::PeerProtocol{o.receiver_protocol, true};
          c.rate_limit.reset();
          c.offer_part_bytes = o.offer_part_bytes;
          c.answer_timeout = o.answer_timeout;
          return c;
        }()),
        r([&] {
          ReceiverConfig c;
          c.root_hash = sum_root;
          c.protocol = o.receiver_protocol;
          c.early_answers = o.receiver_early;
          return c;
        }()) {
    s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, now);
    s.add_paths({{LaneKind::tcp, "a", "a"}}, now);
    s.handle_lane_connected(1, LaneTraits::tcp(), now);
    s.handle_message(1, wire::LaneWelcome{1}, now);
    r.start(LaneTraits::tcp(), now);
    r.handle_lane_connected(1, LaneTraits::tcp(), now);
    r.handle_message(1, wire::LaneJoin{wire::join_version(c_peer()), 1}, now);
    while (s.poll_action()) {}
    while (r.poll_action()) {}
  }
  wire::PeerProtocol c_peer() const { return {opt.receiver_protocol, true}; }

  Options opt;
  Sender s;
  Receiver r;
  Time now = t0;
  std::vector<wire::ManifestEntry> walked;
  size_t walked_first = 0;  // the index of walked[0] (Options::window)
  size_t peak_held = 0;     // the most entries walked held at once
  size_t waits = 0;         // steps the walk waited (Options::window)
  size_t longest_wait = 0;  // the most steps (ms) in a row it waited
  struct InFlight {
    Time at;
    LaneNo lane;
    std::variant<ToReceiver, ToSender> msg;
  };
  std::deque<InFlight> wire_;
  std::map<LaneNo, std::deque<SendPiece>> lanes;
  std::set<LaneNo> dead;
  struct Job {
    Time at;
    std::variant<PrepareOffer, PrepareOfferPart> ask;
  };
  std::deque<Job> engine;
  uint64_t engine_bytes = 0;  // the disk the engine promised so far (running total)
  // What happened, and when.
  Time last_frame_at = Time::never(), first_piece_at = Time::never(), first_part_accept_at = Time::never();
  Time ended_at = Time::never();
  std::optional<TransferOutcome> outcome;
  size_t part_accepts = 0, pieces_sent = 0, prepares_whole = 0, abandoned = 0;
  LaneNo offer_lane = UINT32_MAX;
  struct PartSent {
    Time at;
    uint32_t first_entry;
    size_t entries;
  };
  std::vector<PartSent> parts_sent;  // every offer part the sender sent, in order
  uint64_t accepted_heard = 0;        // the most entries an accept_part that reached the sender named
  Time killed_at = Time::never();
  uint64_t accepted_at_kill = 0;  // accepted_heard when the offer's lane died
  size_t first_at_kill = 0;       // walked_first then (Options::window)
  std::optional<bool> head_ordered;  // what the offer's head said (wire::Offer::ordered)
  /// Every part the receiver's engine was handed, no longer held by it once its job ran.
  std::vector<std::weak_ptr<const std::vector<wire::ManifestEntry>>> parts_seen;
  std::vector<uint64_t> prefixes;  // the receiver's verified_prefix at each step

  void drain_all() {
    while (auto a = s.poll_action()) {
      if (auto* m = std::get_if<SendMessage>(&*a)) {
        if (std::holds_alternative<wire::Offer>(m->msg) || std::holds_alternative<wire::OfferPart>(m->msg)) {
          last_frame_at = now;
          offer_lane = m->lane;
        }
        if (const auto* part = std::get_if<wire::OfferPart>(&m->msg))
          parts_sent.push_back({now, part->first_entry, part->entries.size()});
        if (const auto* head = std::get_if<wire::Offer>(&m->msg)) head_ordered = head->ordered;
        wire_.push_back({now + Duration::millis(1), m->lane, m->msg});
      } else if (auto* p = std::get_if<SendPiece>(&*a)) {
        if (first_piece_at == Time::never()) first_piece_at = now;
        ++pieces_sent;
        lanes[p->lane].push_back(*p);
      } else if (auto* c = std::get_if<CancelPiece>(&*a)) {
        std::erase_if(lanes[c->lane], [&](const SendPiece& x) { return x.assign.piece == c->piece; });
      } else if (auto* e = std::get_if<TransferEnded>(&*a)) {
        outcome = e->outcome;
        ended_at = now;
      }
    }
    while (auto a = r.poll_action()) {
      if (auto* m = std::get_if<RecvSendMessage>(&*a)) {
        if (std::holds_alternative<wire::AcceptPart>(m->msg)) {
          ++part_accepts;
          if (first_part_accept_at == Time::never()) first_part_accept_at = now;
        }
        wire_.push_back({now + Duration::millis(1), m->lane, m->msg});
      } else if (auto* p = std::get_if<PrepareOffer>(&*a)) {
        ++prepares_whole;
        engine.push_back({now + opt.prepare_whole, *p});
      } else if (auto* p = std::get_if<PrepareOfferPart>(&*a)) {
        engine.push_back({now + opt.prepare_part, std::move(*p)});
      } else if (auto* f = std::get_if<FinalizeTransfer>(&*a)) {
        r.handle_finalized(f->transfer, wire::ResultStatus::verified, "verified", now);
      } else if (std::holds_alternative<AbandonTransfer>(*a)) {
        ++abandoned;
      }
    }
  }
  void run_engine() {
    while (!engine.empty() && engine.front().at <= now) {
      Job j = std::move(engine.front());
      engine.pop_front();
      if (auto* p = std::get_if<PrepareOfferPart>(&j.ask)) {
        for (const auto& part : p->parts) parts_seen.push_back(part);
        uint64_t bytes = 0;
        for (const auto& part : p->parts)
          for (const auto& e : *part) bytes += e.kind == wire::EntryKind::file ? e.size : 0;
        if (engine_bytes + bytes > opt.disk_bytes) {
          r.handle_offer_prepared(p->transfer, wire::Refuse{p->transfer, wire::RefuseReason::no_space, "no space"}, now);
        } else {
          engine_bytes += bytes;
          if (p->whole) r.handle_offer_prepared(p->transfer, wire::Accept{p->transfer, {}}, now);
          else r.handle_part_prepared(p->transfer, now);
        }
      } else {
        const auto& o = *std::get<PrepareOffer>(j.ask).offer;
        if (o.total_bytes() > opt.disk_bytes)
          r.handle_offer_prepared(o.transfer_id, wire::Refuse{o.transfer_id, wire::RefuseReason::no_space, "no space"}, now);
        else
          r.handle_offer_prepared(o.transfer_id, wire::Accept{o.transfer_id, {}}, now);
      }
      drain_all();
    }
  }
  void deliver() {
    while (!wire_.empty() && wire_.front().at <= now) {
      InFlight m = std::move(wire_.front());
      wire_.pop_front();
      if (dead.count(m.lane)) continue;
      if (auto* to_r = std::get_if<ToReceiver>(&m.msg))
        std::visit([&](const auto& x) { r.handle_message(m.lane, x, now); }, *to_r);
      else {
        if (const auto* a = std::get_if<wire::AcceptPart>(&std::get<ToSender>(m.msg)))
          accepted_heard = std::max<uint64_t>(accepted_heard, a->entries);
        std::visit([&](const auto& x) { s.handle_message(m.lane, x, now); }, std::get<ToSender>(m.msg));
      }
      drain_all();
    }
  }
  void move_pieces(uint32_t id) {
    for (auto& [lane, q] : lanes) {
      if (q.empty() || dead.count(lane)) continue;
      const SendPiece p = q.front();
      q.pop_front();
      const wire::Digest h{{static_cast<uint8_t>(p.assign.piece)}, 16};
      s.handle_piece_started(lane, p.assign.piece, now);
      s.handle_piece_hashed(lane, p.assign.piece, h, now);
      s.handle_piece_written(lane, p.assign.piece, now);
      r.handle_piece_verified(lane, id, p.assign.piece, {p.assign.offset.count(), p.assign.length.count(), h},
                              Duration::millis(1), now);
      drain_all();
    }
  }
  void kill(LaneNo lane) {
    killed_at = now;
    accepted_at_kill = accepted_heard;
    first_at_kill = walked_first;
    dead.insert(lane);
    lanes.erase(lane);
    s.handle_lane_failed(lane, "reset", true, now);
    r.handle_lane_failed(lane, "reset", now);
    drain_all();
  }

  /// Walks `entries` and runs until the transfer ends (or 20 s).
  void run(const std::vector<wire::ManifestEntry>& entries) {
    TransferSpec spec;
    spec.streamed = true;
    spec.early_pieces = opt.sender_early;
    spec.entries_in_place = &walked;
    spec.ordered = opt.ordered;
    if (opt.window) spec.entries_in_place_first = &walked_first;
    const auto id = s.start_transfer(std::move(spec), now);
    ASSERT_TRUE(id);
    drain_all();
    size_t at = 0, waiting = 0;
    while (!outcome && now < t0 + Duration::seconds(20)) {
      now = now + Duration::millis(1);
      if (at < entries.size() && opt.window) {
        const size_t need = s.entries_needed_from();
        ASSERT_GE(need, walked_first) << "the entries needed went back";
        walked.erase(walked.begin(), walked.begin() + static_cast<ptrdiff_t>(need - walked_first));
        walked_first = need;
      }
      if (at < entries.size() && opt.window && s.walk_should_wait(at, opt.window)) {
        ++waits;
        longest_wait = std::max(longest_wait, ++waiting);
      } else if (at < entries.size()) {
        waiting = 0;
        const size_t end = std::min(entries.size(), at + 1000);
        walked.insert(walked.end(), entries.begin() + static_cast<ptrdiff_t>(at),
                      entries.begin() + static_cast<ptrdiff_t>(end));
        at = end;
        peak_held = std::max(peak_held, walked.size());
        s.add_entries({}, at == entries.size(), now);
        drain_all();
      }
      if (now >= opt.kill_offer_lane_at && offer_lane != UINT32_MAX && dead.empty()) kill(offer_lane);
      deliver();
      run_engine();
      move_pieces(*id);
      prefixes.push_back(r.verified_prefix(*id));
      if (auto t = s.poll_timeout(); t && *t <= now) s.handle_timeout(now);
      if (auto t = r.poll_timeout(); t && *t <= now) r.handle_timeout(now);
      drain_all();
    }
  }
};

/// `n` files of 4 KiB in directories of 100 (a 1 MiB chunk holds 256 of them).
std::vector<wire::ManifestEntry> tree_4k(size_t n) {
  auto out = tree(n);
  for (auto& e : out)
    if (e.kind == wire::EntryKind::file) e.size = 4096;
  return out;
}

// Answered part by part, the receiver's machine keeps no entry it handed
// its engine once the part is accepted (issue 18: the engine lets go of
// what it wrote, and nothing else may hold it), finds the sparse files'
// holes as parts are accepted, and says how far every byte is verified or
// a hole (verified_prefix: what the engine may let go of), which moves on
// as pieces come, in any order, until it is the whole transfer.
TEST(StreamedOffer, TheReceiversMachineKeepsNoAcceptedPartAndSaysHowFarEveryByteIsVerified) {
  auto entries = tree_4k(60'000);
  for (size_t i = 1000; i < entries.size(); i += 7919) {  // a few sparse files: 1 MiB, 4 KiB of data each
    if (entries[i].kind != wire::EntryKind::file) continue;
    entries[i].size = 1 << 20;
    entries[i].data = std::vector<wire::DataRange>{{12288, 4096}};
  }
  uint64_t total = 0;
  for (const auto& e : entries) total += e.kind == wire::EntryKind::file ? e.size : 0;
  EarlyRun run({});
  run.run(entries);
  ASSERT_TRUE(run.outcome);
  ASSERT_TRUE(run.outcome->verified()) << run.outcome->message;
  EXPECT_EQ(run.head_ordered, std::optional<bool>(true));
  ASSERT_GE(run.parts_seen.size(), 4u);
  for (size_t k = 0; k < run.parts_seen.size(); ++k) EXPECT_TRUE(run.parts_seen[k].expired()) << "part " << k;
  // Never back, part of the way while the walk went on, all of it at the end.
  ASSERT_FALSE(run.prefixes.empty());
  for (size_t k = 1; k < run.prefixes.size(); ++k) ASSERT_GE(run.prefixes[k], run.prefixes[k - 1]);
  EXPECT_GT(run.prefixes[run.prefixes.size() / 2], 0u);
  EXPECT_LT(run.prefixes[run.prefixes.size() / 2], total);
  EXPECT_EQ(run.prefixes.back(), total);

  // A receiver of protocol 9 is not told: it would refuse the options bit.
  EarlyRun older({.receiver_protocol = 9});
  older.run(tree_4k(20'000));
  ASSERT_TRUE(older.outcome && older.outcome->verified());
  EXPECT_EQ(older.head_ordered, std::optional<bool>(false));
  EXPECT_GT(older.part_accepts, 0u);  // answered part by part all the same
}

// A hard link names an entry of an earlier part, which the machine checks
// when the link comes: it keeps every part of an offer not in path order
// (-H), and an offer in path order may carry no link at all — the part
// that has one is refused, not read from a part let go.
TEST(StreamedOffer, ALinkToAnEarlierPartIsCheckedAndAnOfferInPathOrderMayCarryNone) {
  auto entries = tree_4k(40'000);
  const size_t target = 5, link = entries.size() - 3;  // far apart: parts apart
  ASSERT_EQ(entries[target].kind, wire::EntryKind::file);
  ASSERT_EQ(entries[link].kind, wire::EntryKind::file);
  entries[link].hard_link_to = static_cast<uint32_t>(target);
  entries[link].size = 0;
  EarlyRun links({.ordered = false});
  links.run(entries);
  ASSERT_TRUE(links.outcome);
  EXPECT_TRUE(links.outcome->verified()) << links.outcome->message;
  EXPECT_EQ(links.head_ordered, std::optional<bool>(false));
  // The link came in a part after the head, which held its file and was accepted first.
  ASSERT_FALSE(links.parts_sent.empty());
  EXPECT_GT(links.parts_sent.front().first_entry, target);
  EXPECT_LE(links.parts_sent.back().first_entry, link);
  EXPECT_GE(links.part_accepts, 2u);

  EarlyRun ordered({});
  ordered.run(entries);
  ASSERT_TRUE(ordered.outcome);
  EXPECT_FALSE(ordered.outcome->verified());
  EXPECT_NE(ordered.outcome->message.find("in path order links a file"), std::string::npos) << ordered.outcome->message;
}

TEST(StreamedOffer, PiecesOfAcceptedPartsLeaveBeforeTheLastPartAndTheTransferEndsSooner) {
  const auto entries = tree_4k(150'000);  // a walk of 152 ms, 586 MiB: ~293 ms over two lanes
  EarlyRun early({});
  early.run(entries);
  ASSERT_TRUE(early.outcome);
  ASSERT_TRUE(early.outcome->verified()) << early.outcome->message;
  EXPECT_GE(early.part_accepts, 8u);
  EXPECT_EQ(early.prepares_whole, 0u);
  // The head goes after ~15,000 entries (15 ms), its answer two steps and
  // a prepare later: the first piece within 30 ms of a 152 ms walk, long
  // before the last part.
  EXPECT_LT(early.first_piece_at, t0 + Duration::millis(30));
  EXPECT_LT(early.first_piece_at + Duration::millis(100), early.last_frame_at);
  EXPECT_EQ(early.r.transfer(1)->verified_bytes, 150'000u * 4096);
  // From the first piece on, the two lanes are never short of work: the
  // walk (4 MB a ms) outruns them (2 MiB a ms), so the end comes within
  // 5 % of their own time for the bytes (586 MiB at 2 MiB/ms: 293 ms).
  EXPECT_LT(early.ended_at, early.first_piece_at + Duration::millis(308));

  // Protocol 8's order in the same world: the pieces wait for the walk, the
  // whole offer's prepare and its answer; the transfer ends that much later.
  EarlyRun whole({.receiver_early = false});
  whole.run(entries);
  ASSERT_TRUE(whole.outcome);
  ASSERT_TRUE(whole.outcome->verified()) << whole.outcome->message;
  EXPECT_EQ(whole.part_accepts, 0u);
  EXPECT_GT(whole.first_piece_at, whole.last_frame_at + Duration::millis(20));
  EXPECT_LT(early.ended_at + Duration::millis(100), whole.ended_at)
      << "early " << early.ended_at.ns() / 1000000 << " ms, whole " << whole.ended_at.ns() / 1000000 << " ms";
  // The figures docs/engine.md quotes (--gtest_output=xml shows them).
  RecordProperty("first_piece_ms_early", std::to_string(early.first_piece_at.ns() / 1000000));
  RecordProperty("first_piece_ms_whole", std::to_string(whole.first_piece_at.ns() / 1000000));
  RecordProperty("last_frame_ms", std::to_string(early.last_frame_at.ns() / 1000000));
  RecordProperty("end_ms_early", std::to_string(early.ended_at.ns() / 1000000));
  RecordProperty("end_ms_whole", std::to_string(whole.ended_at.ns() / 1000000));
}

TEST(StreamedOffer, AProtocol8PeerGetsTheOldOrder) {
  const auto entries = tree_4k(40'000);
  // A receiver that says 8: the offer does not ask, no part is answered.
  EarlyRun old_receiver({.receiver_protocol = 8});
  old_receiver.run(entries);
  // A sender that does not ask (protocol 8's offer) to a receiver that could answer early.
  EarlyRun old_sender({.sender_early = false});
  old_sender.run(entries);
  for (EarlyRun* run : {&old_receiver, &old_sender}) {
    ASSERT_TRUE(run->outcome);
    EXPECT_TRUE(run->outcome->verified()) << run->outcome->message;
    EXPECT_EQ(run->part_accepts, 0u);
    EXPECT_EQ(run->prepares_whole, 1u);
    EXPECT_GT(run->first_piece_at, run->last_frame_at);
  }
}

TEST(StreamedOffer, ASyncOrADryRunIsNotAnsweredEarly) {
  for (const bool dry : {false, true}) {
    Pair pair;
    TransferSpec spec;
    spec.streamed = true;
    spec.early_pieces = true;
    spec.sync.sync = true;
    spec.sync.dry_run = dry;
    spec.entries = tree_4k(20'000);
    pair.s.start_transfer(std::move(spec), t0);
    pair.s.add_entries({}, true, t0);
    const auto sent = drain<SendMessage>(pair.s);
    ASSERT_FALSE(sent.empty());
    ASSERT_TRUE(std::holds_alternative<wire::Offer>(sent[0].msg));
    EXPECT_FALSE(std::get<wire::Offer>(sent[0].msg).early_answers);
  }
}

TEST(StreamedOffer, RunningOutOfSpaceMidOfferEndsCleanlyAsANoSpaceRefusal) {
  const auto entries = tree_4k(100'000);
  // Room for about a third of the tree: parts are accepted and pieces flow
  // until the part that does not fit.
  EarlyRun run({.disk_bytes = 130ull << 20});
  run.run(entries);
  ASSERT_TRUE(run.outcome);
  EXPECT_EQ(run.outcome->end, TransferOutcome::End::refused);
  EXPECT_EQ(run.outcome->refusal, wire::RefuseReason::no_space);
  EXPECT_GE(run.part_accepts, 1u);
  EXPECT_GT(run.pieces_sent, 0u);
  EXPECT_EQ(run.abandoned, 1u);  // what the accepted parts made stays for a later run
  // It ended before the walk did, and nothing moved after it.
  EXPECT_LT(run.ended_at, t0 + Duration::millis(100));
  const size_t sent = run.pieces_sent;
  run.now = run.now + Duration::seconds(1);
  run.s.handle_timeout(run.now);
  run.r.handle_timeout(run.now);
  run.drain_all();
  EXPECT_EQ(run.pieces_sent, sent);
  EXPECT_FALSE(run.s.transfer_running());
}

TEST(StreamedOffer, ALaneLostMidWalkAfterEarlyPiecesStillVerifies) {
  const auto entries = tree_4k(60'000);  // a walk of 61 ms
  EarlyRun run({.kill_offer_lane_at = t0 + Duration::millis(35)});
  run.run(entries);
  ASSERT_TRUE(run.outcome);
  ASSERT_TRUE(run.outcome->verified()) << run.outcome->message;
  ASSERT_EQ(run.dead.size(), 1u);
  EXPECT_LT(run.first_piece_at, t0 + Duration::millis(35));  // pieces flowed before the lane died
  EXPECT_GT(run.last_frame_at, t0 + Duration::millis(35));    // and the offer went on after it, on the other lane
  EXPECT_NE(run.offer_lane, *run.dead.begin());
  EXPECT_EQ(run.r.transfer(1)->verified_bytes, 60'000u * 4096);
}

// A lane lost mid-offer sends the head again and only the parts the
// receiver has not wholly accepted: on a million entries the accepted
// ones are most of the offer (before: every part made so far, again).
TEST(StreamedOffer, ALaneLostMidWalkSendsAgainOnlyThePartsNotYetAccepted) {
  const auto entries = tree_4k(60'000);
  // Parts of ~1,000 entries: dozens before the lane dies.
  EarlyRun run({.kill_offer_lane_at = t0 + Duration::millis(35), .offer_part_bytes = 64 * 1024});
  size_t parts_before = 0;
  run.run(entries);
  ASSERT_TRUE(run.outcome);
  ASSERT_TRUE(run.outcome->verified()) << run.outcome->message;
  ASSERT_NE(run.killed_at, Time::never());
  for (const auto& p : run.parts_sent)
    if (p.at < run.killed_at) parts_before = std::max<size_t>(parts_before, p.first_entry + p.entries);
  // What went before the death and again after it.
  std::vector<EarlyRun::PartSent> again;
  for (const auto& p : run.parts_sent)
    if (p.at >= run.killed_at && p.first_entry < parts_before) again.push_back(p);
  const uint64_t accepted_at_kill = run.accepted_at_kill;
  // Here: 28,693 of 33,448 entries accepted; 5 parts go again (before: 34).
  ASSERT_GT(accepted_at_kill, 0u) << "the receiver accepted nothing before the lane died: the test shows nothing";
  ASSERT_FALSE(again.empty()) << "nothing sent again: the receiver lacked nothing?";
  for (const auto& p : again)
    EXPECT_GT(p.first_entry + p.entries, accepted_at_kill) << "a part of accepted entries only went again";
  // Every part not wholly accepted went again, in order.
  EXPECT_LE(again.front().first_entry, accepted_at_kill);
  EXPECT_EQ(again.back().first_entry + again.back().entries, parts_before);
}

// Issue 18: the sender's memory is a window of the walk, not the tree. The
// walk lets go of every entry the machine reads no more (its bytes acked,
// its part accepted) and waits while the window is full; the machine never
// reads an entry let go (EntryWindow throws), and the transfer takes about
// as long as with every entry held.
TEST(StreamedOffer, AWindowedWalkHoldsAWindowOfEntriesAndTakesAboutAsLong) {
  const auto entries = tree_4k(150'000);
  EarlyRun held({});
  held.run(entries);
  ASSERT_TRUE(held.outcome);
  ASSERT_TRUE(held.outcome->verified()) << held.outcome->message;
  // A window of ~1.5 parts (a part holds ~15,000 of these entries).
  EarlyRun windowed({.window = 24'000});
  windowed.run(entries);
  ASSERT_TRUE(windowed.outcome);
  ASSERT_TRUE(windowed.outcome->verified()) << windowed.outcome->message;
  EXPECT_EQ(windowed.r.transfer(1)->verified_bytes, 150'000u * 4096);
  EXPECT_GT(windowed.waits, 0u) << "the walk never waited: the window shows nothing";
  EXPECT_LE(windowed.peak_held, 24'000u + 1'000u);  // the window and a batch
  EXPECT_EQ(held.peak_held, entries.size());  // without a window: the whole tree
  EXPECT_LT(windowed.ended_at.ns(), held.ended_at.ns() * 11 / 10)
      << "windowed " << windowed.ended_at.ns() / 1000000 << " ms, held " << held.ended_at.ns() / 1000000 << " ms";
  RecordProperty("end_ms_held", std::to_string(held.ended_at.ns() / 1000000));
  RecordProperty("end_ms_windowed", std::to_string(windowed.ended_at.ns() / 1000000));
}

// The walk waiting on its window sends no part, so no accept_part comes:
// that silence is the sender's own, not a receiver that stopped answering.
// Here a file of 256 MiB early in the walk holds the window for ~130 ms
// of the lanes' time, against an answer clock of 6 ms (a part's round trip
// is 4 ms): it ends verified (the clock
// stands while every part sent is accepted, and starts with the next).
TEST(StreamedOffer, AWalkWaitingOnItsWindowIsNotTakenForASilentReceiver) {
  auto entries = tree_4k(60'000);
  size_t big = 0;
  while (entries[big].kind != wire::EntryKind::file) ++big;
  entries[big].size = 256u << 20;
  EarlyRun run({.window = 24'000, .answer_timeout = Duration::millis(6)});
  run.run(entries);
  ASSERT_TRUE(run.outcome);
  ASSERT_TRUE(run.outcome->verified()) << run.outcome->message;
  EXPECT_GT(run.longest_wait, 60u);  // waits well past the clock
  EXPECT_EQ(run.r.transfer(1)->verified_bytes, 59'999u * 4096 + (256u << 20));
}

// An offer answered whole cannot be answered before its last part: the
// answer clock starts again with each part, so a walk longer than the clock
// (here 40 ms against 8, a part a ms) is no silence of the receiver's; and once the
// last part has gone, a receiver that does not answer in time still ends
// the transfer (its prepare takes 50 ms here).
TEST(StreamedOffer, AnOfferAnsweredWholeHasItsClockFromTheLastPartAndStillTimesOut) {
  const auto entries = tree_4k(40'000);
  // Parts of ~1,000 entries: one a ms, the walk 40 ms.
  EarlyRun answered({.receiver_early = false, .prepare_whole = Duration::millis(2),
                     .offer_part_bytes = 64 * 1024, .answer_timeout = Duration::millis(8)});
  answered.run(entries);
  ASSERT_TRUE(answered.outcome);
  EXPECT_TRUE(answered.outcome->verified()) << answered.outcome->message;
  EXPECT_GT(answered.last_frame_at, t0 + Duration::millis(30));  // the walk outlasted the clock
  EarlyRun silent({.receiver_early = false, .prepare_whole = Duration::millis(50),
                   .offer_part_bytes = 64 * 1024, .answer_timeout = Duration::millis(8)});
  silent.run(entries);
  ASSERT_TRUE(silent.outcome);
  EXPECT_EQ(silent.outcome->end, TransferOutcome::End::timed_out) << silent.outcome->message;
  EXPECT_GE(silent.ended_at, silent.last_frame_at + Duration::millis(8));
  EXPECT_LT(silent.ended_at, silent.last_frame_at + Duration::millis(20));
}

// A window smaller than a part: the walk must go on while the receiver has
// accepted every part sent and every planned byte is acked (nothing else
// would free an entry), so it goes in steps, and still ends.
TEST(StreamedOffer, AWindowSmallerThanAPartStillEnds) {
  const auto entries = tree_4k(60'000);
  EarlyRun run({.window = 4'000});
  run.run(entries);
  ASSERT_TRUE(run.outcome);
  ASSERT_TRUE(run.outcome->verified()) << run.outcome->message;
  EXPECT_GT(run.waits, 0u);
  EXPECT_EQ(run.r.transfer(1)->verified_bytes, 60'000u * 4096);
}

// A lane lost mid-walk under a window: the parts sent again (from the one
// holding the first entry not accepted) are all still held.
TEST(StreamedOffer, ALaneLostMidWalkUnderAWindowSendsAgainWhatItStillHolds) {
  const auto entries = tree_4k(60'000);
  EarlyRun run({.kill_offer_lane_at = t0 + Duration::millis(35), .offer_part_bytes = 64 * 1024, .window = 6'000});
  run.run(entries);
  ASSERT_TRUE(run.outcome);
  ASSERT_TRUE(run.outcome->verified()) << run.outcome->message;
  ASSERT_NE(run.killed_at, Time::never());
  ASSERT_GT(run.first_at_kill, 0u) << "nothing was let go before the lane died: the test shows nothing";
  size_t again = 0;
  for (const auto& p : run.parts_sent)
    if (p.at >= run.killed_at && p.at < run.killed_at + Duration::millis(2)) {
      ++again;
      EXPECT_GE(p.first_entry, run.first_at_kill) << "a part of entries let go went again";
    }
  EXPECT_GT(again, 0u) << "no part went again on the new lane";
  EXPECT_EQ(run.r.transfer(1)->verified_bytes, 60'000u * 4096);
}

/// A receiver that answers part by part, started, its first actions drained.
Receiver early_receiver() {
  ReceiverConfig cfg;
  cfg.root_hash = sum_root;
  cfg.early_answers = true;
  Receiver r(cfg);
  r.start(LaneTraits::tcp(), t0);
  while (r.poll_action()) {}
  return r;
}

/// The head of transfer 7 (101 entries) asking to be answered part by part.
wire::Offer early_head() {
  wire::Offer head = offer_of(tree_4k(100));
  head.continued = true;
  head.early_answers = true;
  return head;
}

TEST(StreamedOffer, ARepeatedHeadHearsTheAcceptedPartsAgainAndACancelAbandonsThemOnce) {
  Receiver r = early_receiver();
  const wire::Offer head = early_head();
  r.handle_message(0, head, t0);
  const auto asks = drain<PrepareOfferPart>(r);
  ASSERT_EQ(asks.size(), 1u);
  EXPECT_EQ(asks[0].first, 0u);
  ASSERT_EQ(asks[0].parts.size(), 1u);  // the head's entries, shared
  EXPECT_EQ(asks[0].parts[0]->size(), 101u);
  EXPECT_GE(asks[0].parts[0].use_count(), 2);  // the machine's own: handed over, not copied
  EXPECT_TRUE(asks[0].head.has_value());
  EXPECT_EQ(asks[0].whole, nullptr);  // more parts follow
  EXPECT_FALSE(r.taking_pieces(7));
  r.handle_part_prepared(7, t0);
  auto said = drain<RecvSendMessage>(r);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(std::get<wire::AcceptPart>(said[0].msg), (wire::AcceptPart{7, 101}));
  EXPECT_TRUE(r.taking_pieces(7));
  EXPECT_FALSE(r.accepted(7));
  // The head again (its lane died, and our answer may have with it): the same answer.
  r.handle_message(0, head, t0);
  said = drain<RecvSendMessage>(r);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(std::get<wire::AcceptPart>(said[0].msg), (wire::AcceptPart{7, 101}));
  // The sender cancels: what the part made is abandoned once, as cancelled.
  r.handle_message(0, wire::Cancel{7, "the walk failed"}, t0);
  const auto abandoned = drain<AbandonTransfer>(r);
  ASSERT_EQ(abandoned.size(), 1u);
  EXPECT_TRUE(abandoned[0].cancelled);
  EXPECT_FALSE(r.taking_pieces(7));
  // Its last part, late: nothing is asked or abandoned again.
  r.handle_message(0, wire::OfferPart{7, 101, true, tree_4k(1)}, t0);
  r.handle_part_prepared(7, t0);
  while (auto a = r.poll_action()) {
    EXPECT_FALSE(std::holds_alternative<PrepareOfferPart>(*a));
    EXPECT_FALSE(std::holds_alternative<PrepareOffer>(*a));
    EXPECT_FALSE(std::holds_alternative<AbandonTransfer>(*a));
  }
}

// The engine hands each decoded message over by value: the head's and the
// parts' entries become the transfer's parts as they are (the same buffers),
// where the const overload copies them.
TEST(StreamedOffer, AHeadAndAPartHandedOverByValueKeepTheirEntriesBuffers) {
  Receiver r = early_receiver();
  wire::Offer head = early_head();
  const wire::ManifestEntry* head_entries = head.entries.data();
  r.handle_message(0, ToReceiver(std::move(head)), t0);
  auto asks = drain<PrepareOfferPart>(r);
  ASSERT_EQ(asks.size(), 1u);
  ASSERT_EQ(asks[0].parts.size(), 1u);
  EXPECT_EQ(asks[0].parts[0]->size(), 101u);
  EXPECT_EQ(asks[0].parts[0]->data(), head_entries);
  r.handle_part_prepared(7, t0);
  (void)drain<RecvSendMessage>(r);

  wire::OfferPart part{7, 101, false, tree_4k(50)};
  const wire::ManifestEntry* part_entries = part.entries.data();
  r.handle_message(0, ToReceiver(std::move(part)), t0);
  asks = drain<PrepareOfferPart>(r);
  ASSERT_EQ(asks.size(), 1u);
  ASSERT_EQ(asks[0].parts.size(), 1u);
  EXPECT_EQ(asks[0].first, 101u);
  EXPECT_EQ(asks[0].parts[0]->data(), part_entries);
  r.handle_part_prepared(7, t0);

  const ToReceiver last = wire::OfferPart{7, 152, true, tree_4k(1)};
  r.handle_message(0, last, t0);  // the const overload: a copy, the caller's part untouched
  const auto& last_entries = std::get<wire::OfferPart>(last).entries;
  asks = drain<PrepareOfferPart>(r);
  ASSERT_EQ(asks.size(), 1u);
  ASSERT_EQ(asks[0].parts.size(), 1u);
  EXPECT_NE(asks[0].parts[0]->data(), last_entries.data());
  EXPECT_EQ(*asks[0].parts[0], last_entries);
  EXPECT_EQ(last_entries.size(), 2u);
  EXPECT_NE(asks[0].whole, nullptr);  // the last part: the whole offer
}

TEST(StreamedOffer, TheSenderTakesOnlyEntriesItSentAndAClosingAcceptWithoutRanges) {
  const auto entries = tree_4k(20'000);  // the head is cut after ~15,000 entries (1 MiB)
  for (const bool too_many : {false, true}) {
    Pair pair;
    std::vector<wire::ManifestEntry> walked = entries;
    TransferSpec spec;
    spec.streamed = true;
    spec.early_pieces = true;
    spec.entries_in_place = &walked;
    const auto id = pair.s.start_transfer(std::move(spec), t0);
    ASSERT_TRUE(id);
    pair.s.add_entries({}, false, t0);
    const auto sent = drain<SendMessage>(pair.s);
    ASSERT_EQ(sent.size(), 1u);
    const auto& h = std::get<wire::Offer>(sent[0].msg);
    EXPECT_TRUE(h.early_answers);
    const auto n = static_cast<uint32_t>(h.entries.size());
    ASSERT_LT(n, entries.size());
    if (too_many) {
      // More entries than went: the receiver cannot have checked them.
      pair.s.handle_message(0, wire::AcceptPart{*id, n + 1}, t0);
      const auto ended = drain<TransferEnded>(pair.s);
      ASSERT_EQ(ended.size(), 1u);
      EXPECT_EQ(ended[0].outcome.end, TransferOutcome::End::peer_error);
      continue;
    }
    pair.s.handle_message(0, wire::AcceptPart{*id, n}, t0);
    ASSERT_NE(pair.s.scheduler(), nullptr);
    // Whole chunks of the accepted files only.
    uint64_t accepted_bytes = 0;
    for (size_t i = 0; i < n; ++i) accepted_bytes += entries[i].size;  // directories are 0
    EXPECT_EQ(pair.s.scheduler()->plan().total().count(), accepted_bytes / (1 << 20) * (1 << 20));
    EXPECT_FALSE(drain<SendPiece>(pair.s).empty());
    pair.s.add_entries({}, true, t0);  // the last part goes
    // A closing accept that holds ranges answers an offer that was not answered early.
    wire::Accept closing{*id, {wire::HeldRange{0, 4096, wire::Digest{{1}, 16}}}};
    pair.s.handle_message(0, closing, t0);
    const auto ended = drain<TransferEnded>(pair.s);
    ASSERT_EQ(ended.size(), 1u);
    EXPECT_EQ(ended[0].outcome.end, TransferOutcome::End::peer_error);
  }
}
}  // namespace
}  // namespace braid::session
