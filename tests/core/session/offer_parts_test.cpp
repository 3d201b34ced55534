// An offer in parts (protocol 6): a manifest too big for one frame is cut by
// the sender (wire::split_offer) and put together by the receiver
// (wire::append_offer_part) — the wire functions alone, then the two
// session machines message by message; and a streamed offer (the sender's
// parts go while it still walks the tree: TransferSpec::streamed).
#include <gtest/gtest.h>

#include "core/session/receiver.hpp"
#include "core/session/sender.hpp"

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

template <class A, class M>
std::vector<A> drain(M& m) {
  std::vector<A> out;
  while (auto a = m.poll_action())
    if (auto* x = std::get_if<A>(&*a)) out.push_back(*x);
  return out;
}

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

}  // namespace
}  // namespace braid::session
