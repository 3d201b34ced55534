// Sync's decisions (core/session/sync.hpp) and the machines' part in it:
// which files are kept, which chunks are sent, how both ends count them.
#include <gtest/gtest.h>

#include <memory>

#include "core/session/receiver.hpp"
#include "core/session/sender.hpp"
#include "machine_actions.hpp"
#include "core/session/sync.hpp"

namespace braid::session {
namespace {

using wire::FileVerdict;
const Time t0 = Time::zero();
constexpr uint64_t MiB = 1 << 20;

wire::ManifestEntry file(const std::string& path, uint64_t size, int64_t mtime = 1000) {
  wire::ManifestEntry e;
  e.path = path;
  e.size = size;
  e.mtime_sec = mtime;
  e.mtime_nsec = 5;
  return e;
}

wire::ManifestEntry dir(const std::string& path) {
  wire::ManifestEntry e;
  e.kind = wire::EntryKind::directory;
  e.path = path;
  return e;
}

sync::Existing there(uint64_t size, int64_t mtime = 1000, uint32_t nsec = 5) {
  return {sync::Existing::Kind::file, size, mtime, nsec};
}

wire::SyncOptions with_sync() {
  wire::SyncOptions o;
  o.sync = true;
  return o;
}

TEST(SyncDecide, TheQuickCheckKeepsAFileWhoseSizeAndMtimeMatch) {
  const auto e = file("a", 10);
  EXPECT_EQ(sync::decide(e, there(10), with_sync()), FileVerdict::unchanged);
  EXPECT_EQ(sync::decide(e, there(11), with_sync()), FileVerdict::older_here);      // size differs
  EXPECT_EQ(sync::decide(e, there(10, 999), with_sync()), FileVerdict::older_here);  // mtime differs
  EXPECT_EQ(sync::decide(e, there(10, 1000, 6), with_sync()), FileVerdict::older_here);  // by a nanosecond
  EXPECT_EQ(sync::decide(e, {}, with_sync()), std::nullopt);                           // new there: sent whole
  EXPECT_EQ(sync::decide(e, there(10), {}), std::nullopt);                             // no sync: sent whole
  EXPECT_EQ(sync::decide(dir("d"), there(10), with_sync()), std::nullopt);
  // A link or a device under the name is not compared: replaced by the file.
  EXPECT_EQ(sync::decide(e, {sync::Existing::Kind::other, 10, 1000, 5}, with_sync()), std::nullopt);
}

TEST(SyncDecide, ChecksumUpdateAndIgnoreExistingAsRsyncMeansThem) {
  const auto e = file("a", 10);
  auto o = with_sync();
  o.checksum = true;  // the stamp proves nothing: compare the chunks
  EXPECT_EQ(sync::decide(e, there(10), o), FileVerdict::older_here);
  o = with_sync();
  o.update = true;
  EXPECT_EQ(sync::decide(e, there(3, 1001), o), FileVerdict::newer_here);
  EXPECT_EQ(sync::decide(e, there(3, 1000, 6), o), FileVerdict::newer_here);
  EXPECT_EQ(sync::decide(e, there(3, 999), o), FileVerdict::older_here);  // older there: updated
  EXPECT_EQ(sync::decide(e, there(10), o), FileVerdict::unchanged);
  o = with_sync();
  o.ignore_existing = true;
  EXPECT_EQ(sync::decide(e, there(3, 1), o), FileVerdict::exists_here);
  EXPECT_EQ(sync::decide(e, {sync::Existing::Kind::other, 0, 0, 0}, o), FileVerdict::exists_here);
  EXPECT_EQ(sync::decide(e, {}, o), std::nullopt);
  EXPECT_TRUE(sync::keeps(FileVerdict::unchanged));
  EXPECT_TRUE(sync::keeps(FileVerdict::newer_here));
  EXPECT_TRUE(sync::keeps(FileVerdict::exists_here));
  EXPECT_FALSE(sync::keeps(FileVerdict::older_here));
}

wire::Offer sync_offer(std::vector<wire::ManifestEntry> entries, uint64_t chunk = MiB) {
  wire::Offer o;
  o.transfer_id = 1;
  o.chunk_size = chunk;
  o.entries = std::move(entries);
  o.sync = with_sync();
  return o;
}

TEST(SyncRecords, KeptFilesMergeAndAreCutAtChunkBoundaries) {
  // a [0, 1.5 MiB)  d  b [1.5, 2 MiB)  c [2 MiB, 2 MiB + 10)  e [.., +3 MiB)
  const auto o = sync_offer({file("a", MiB + MiB / 2), dir("d"), file("b", MiB / 2), file("c", 10),
                             file("e", 3 * MiB)});
  EXPECT_EQ(sync::entry_offsets(o), (std::vector<uint64_t>{0, 3 * MiB / 2, 3 * MiB / 2, 2 * MiB, 2 * MiB + 10}));
  // a and b kept (consecutive in the byte space), c sent, e kept.
  const auto r = sync::kept_records(o, {{0, FileVerdict::unchanged}, {2, FileVerdict::newer_here},
                                        {3, FileVerdict::older_here}, {4, FileVerdict::exists_here}});
  std::vector<std::pair<uint64_t, uint64_t>> got;
  for (const auto& x : r) {
    EXPECT_EQ(x.hash.size, 0);
    got.push_back({x.offset, x.length});
  }
  const uint64_t e0 = 2 * MiB + 10;
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, uint64_t>>{
                     {0, MiB}, {MiB, MiB}, {e0, MiB - 10}, {3 * MiB, MiB}, {4 * MiB, MiB}, {5 * MiB, 10}}));
  EXPECT_TRUE(sync::kept_records(o, {}).empty());
}

TEST(SyncRecords, TheReusableSpansAreTheCommonBytesCutAtChunks) {
  // A file at 0.5 MiB, 3 MiB now, 2 MiB before: [0.5, 1) [1, 2) [2, 2.5).
  const auto s = sync::reusable_spans(MiB / 2, 3 * MiB, 2 * MiB, MiB);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], (sync::Span{MiB / 2, MiB / 2}));
  EXPECT_EQ(s[1], (sync::Span{MiB, MiB}));
  EXPECT_EQ(s[2], (sync::Span{2 * MiB, MiB / 2}));
  EXPECT_EQ(sync::reusable_spans(0, 10, 20, MiB), (std::vector<sync::Span>{{0, 10}}));  // shrunk: its new size
  EXPECT_TRUE(sync::reusable_spans(0, 10, 0, MiB).empty());
}

TEST(SyncRecords, DecisionsMustNameFilesOfASyncOfferInOrder) {
  auto o = sync_offer({file("a", 1), dir("d"), file("b", 1)});
  EXPECT_EQ(sync::check_decisions(o, {{0, FileVerdict::unchanged}, {2, FileVerdict::older_here}}), "");
  EXPECT_NE(sync::check_decisions(o, {{1, FileVerdict::unchanged}}), "");  // a directory
  EXPECT_NE(sync::check_decisions(o, {{3, FileVerdict::unchanged}}), "");  // no such entry
  EXPECT_NE(sync::check_decisions(o, {{2, FileVerdict::unchanged}, {0, FileVerdict::unchanged}}), "");
  o.sync = {};
  EXPECT_NE(sync::check_decisions(o, {{0, FileVerdict::unchanged}}), "");
  EXPECT_EQ(sync::check_decisions(o, {}), "");
}

TEST(SyncRecords, TheTallyCountsFilesByVerdict) {
  const auto o = sync_offer({file("a", 5), file("b", 7), dir("d"), file("c", 11), file("e", 13), file("f", 0)});
  const auto t = sync::tally(o, {{0, FileVerdict::unchanged}, {1, FileVerdict::exists_here}, {3, FileVerdict::newer_here},
                                 {4, FileVerdict::older_here}});
  EXPECT_EQ(t.files_unchanged, 1u);
  EXPECT_EQ(t.files_skipped, 2u);
  EXPECT_EQ(t.files_updated, 1u);
  EXPECT_EQ(t.files_sent, 1u);  // f
  EXPECT_EQ(t.kept_bytes, 5u + 7 + 11);
  // e (13 bytes at 23) reused whole: nothing of it was sent, it is unchanged.
  const auto whole = sync::tally(o, {{4, FileVerdict::older_here}}, {{20, 3, {}}, {23, 13, {}}});
  EXPECT_EQ(whole.files_unchanged, 1u);
  EXPECT_EQ(whole.files_updated, 0u);
  const auto part = sync::tally(o, {{4, FileVerdict::older_here}}, {{23, 12, {}}});
  EXPECT_EQ(part.files_updated, 1u);
}

// ---- the machines ---------------------------------------------------------------

wire::Digest sum_root(wire::HashAlgo, std::vector<PieceRecord> r) {
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  wire::Digest d;
  d.size = 16;
  uint64_t sum = 0;
  for (const auto& x : r) sum = sum * 31 + x.offset * 7 + x.length + x.hash.size + x.hash.bytes[0];
  for (int i = 0; i < 8; ++i) d.bytes[i] = static_cast<uint8_t>(sum >> (8 * i));
  return d;
}

wire::Digest digest(uint8_t b) {
  wire::Digest d;
  d.size = 16;
  d.bytes[0] = b;
  return d;
}

using test::drain;

// a (2 MiB, unchanged there), b (3 MiB, an older version there: its chunks
// 0 and 2 match, 1 differs), c (1 MiB, new).
wire::Offer three_files() {
  return sync_offer({file("a", 2 * MiB), file("b", 3 * MiB), file("c", MiB)});
}
const std::vector<wire::FileDecision> kVerdicts = {{0, FileVerdict::unchanged}, {1, FileVerdict::older_here}};
const std::vector<wire::HeldRange> kOldChunks = {
    {2 * MiB, MiB, digest(1)}, {3 * MiB, MiB, digest(2)}, {4 * MiB, MiB, digest(3)}};

TEST(SyncMachines, TheSenderSendsOnlyTheChunksTheReceiverLacks) {
  SenderConfig cfg;
  cfg.root_hash = sum_root;
  Sender s(cfg);
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  TransferSpec spec;
  spec.entries = three_files().entries;
  spec.sync = with_sync();
  ASSERT_TRUE(s.start_transfer(std::move(spec), t0));
  const auto offers = drain<SendMessage>(s);
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_TRUE(std::get<wire::Offer>(offers[0].msg).sync.sync);
  wire::Accept acc{1, kOldChunks, kVerdicts, 0, {}};
  s.handle_message(0, acc, t0);
  // Only the older version's chunks are checked against the source: the
  // unchanged file is taken on the quick check.
  const auto checks = drain<CheckHeld>(s);
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_EQ(checks[0].held, kOldChunks);
  // The middle chunk of b differs at the source.
  s.handle_held_checked(1, {kOldChunks[0], kOldChunks[2]}, MiB, t0);
  // Whatever the scheduler hands out first lies in b's middle chunk or in c.
  const auto sent = drain<SendPiece>(s);
  ASSERT_FALSE(sent.empty());
  for (const auto& p : sent) {
    const uint64_t at = p.assign.offset.count(), end = at + p.assign.length.count();
    EXPECT_TRUE((at >= 3 * MiB && end <= 4 * MiB) || (at >= 5 * MiB && end <= 6 * MiB)) << at << ".." << end;
  }
  ASSERT_NE(s.scheduler(), nullptr);
  EXPECT_EQ(s.scheduler()->plan().delivered_bytes().count(), 4 * MiB);  // kept a + b's two matching chunks
  EXPECT_EQ(s.kept_bytes(), 2 * MiB);
  EXPECT_EQ(s.resumed_bytes(), 2 * MiB);
  EXPECT_EQ(s.resumed_ranges(), 2u);
  EXPECT_EQ(s.resume_rejected_bytes(), MiB);
  EXPECT_EQ(s.sync_files(), kVerdicts);
}

TEST(SyncMachines, ASenderRefusesVerdictsThatDoNotFitItsOffer) {
  SenderConfig cfg;
  cfg.root_hash = sum_root;
  Sender s(cfg);
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  TransferSpec spec;
  spec.entries = three_files().entries;
  spec.sync = with_sync();
  ASSERT_TRUE(s.start_transfer(std::move(spec), t0));
  drain<SendMessage>(s);
  s.handle_message(0, wire::Accept{1, {}, {{7, FileVerdict::unchanged}}, 0, {}}, t0);
  const auto ended = drain<TransferEnded>(s);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].outcome.end, TransferOutcome::End::peer_error);
}

Receiver started_receiver() {
  ReceiverConfig cfg;
  cfg.root_hash = sum_root;
  cfg.done_wait = Duration::seconds(2);
  Receiver r(cfg);
  r.start(LaneTraits::tcp(), t0);
  (void)r.poll_action();  // addresses
  return r;
}

TEST(SyncMachines, TheReceiverCountsKeptFilesAndHandsTheReusedChunksToFinalize) {
  Receiver r = started_receiver();
  r.handle_message(0, three_files(), t0);
  ASSERT_EQ(drain<PrepareOffer>(r).size(), 1u);
  r.handle_offer_prepared(1, wire::Accept{1, kOldChunks, kVerdicts, 0, {}}, t0);
  const auto answers = drain<RecvSendMessage>(r);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(std::get<wire::Accept>(answers[0].msg).files, kVerdicts);
  // The sender sent b's middle chunk (over a held range: it no longer
  // counts) and c.
  const PieceRecord mid{3 * MiB, MiB, digest(9)}, c{5 * MiB, MiB, digest(4)};
  r.handle_piece_verified(0, 1, 0, mid, Duration::zero(), t0);
  r.handle_piece_verified(0, 1, 1, c, Duration::zero(), t0);
  const auto view = r.transfer(1);
  EXPECT_EQ(view->kept_bytes, 2 * MiB);
  EXPECT_EQ(view->held_bytes, 2 * MiB);
  EXPECT_EQ(view->verified_bytes, 2 * MiB);
  // The sender's records: a as kept (no hash), b's kept chunks, the pieces.
  std::vector<PieceRecord> records = sync::kept_records(three_files(), kVerdicts);
  records.push_back(kOldChunks[0]);
  records.push_back(kOldChunks[2]);
  records.push_back(mid);
  records.push_back(c);
  r.handle_message(0, wire::Done{1, sum_root(wire::HashAlgo::xxh3_128, records)}, t0);
  const auto fin = drain<FinalizeTransfer>(r);
  ASSERT_EQ(fin.size(), 1u);
  std::vector<PieceRecord> reused;
  for (const auto& h : fin[0].held)
    if (h.hash.size) reused.push_back(h);
  EXPECT_EQ(reused, (std::vector<PieceRecord>{kOldChunks[0], kOldChunks[2]}));
}

TEST(SyncMachines, ADryRunEndsWithTheAnswerAndLeavesNothingToAbandon) {
  Receiver r = started_receiver();
  auto o = three_files();
  o.sync.dry_run = true;
  r.handle_message(0, o, t0);
  drain<PrepareOffer>(r);
  r.handle_offer_prepared(1, wire::Accept{1, {}, kVerdicts, 2, {"d/x", "d/y"}}, t0);
  const auto answers = drain<RecvSendMessage>(r);
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(std::get<wire::Accept>(answers[0].msg).extraneous_count, 2u);
  r.handle_message(0, wire::Bye{}, t0);
  EXPECT_TRUE(drain<AbandonTransfer>(r).empty());

  SenderConfig cfg;
  cfg.root_hash = sum_root;
  Sender s(cfg);
  s.start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
  TransferSpec spec;
  spec.entries = o.entries;
  spec.sync = o.sync;
  spec.answer_only = true;
  ASSERT_TRUE(s.start_transfer(std::move(spec), t0));
  drain<SendMessage>(s);
  s.handle_message(0, std::get<wire::Accept>(answers[0].msg), t0);
  const auto ended = drain<TransferEnded>(s);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].outcome.end, TransferOutcome::End::answered);
  EXPECT_EQ(ended[0].outcome.files, kVerdicts);
  EXPECT_EQ(ended[0].outcome.extraneous, (std::vector<std::string>{"d/x", "d/y"}));
  EXPECT_TRUE(drain<SendPiece>(s).empty());
}

// Protocol 11: a receiver with more verdicts than one accept may list
// sends the first of them ahead of it (accept_files), when the offer says
// its sender takes them so; the sender puts them together, also when the
// answer comes again from its first frame (an offer sent again). An older
// sender's offer is refused with the reason. One accept lists two here
// (ReceiverConfig::verdicts_per_accept; the wire's 2^20 otherwise).
TEST(SyncMachines, VerdictsBeyondOneAcceptGoAheadOfItToASenderThatTakesThem) {
  auto through_wire = [](const auto& m) {  // encoded and decoded as a lane would
    const session::Encoded e = session::encode(m);
    return session::decode_to_sender(e.type, e.payload).value();
  };
  std::vector<wire::ManifestEntry> files;
  for (int i = 0; i < 7; ++i) files.push_back(file("f" + std::to_string(i), MiB));
  std::vector<wire::FileDecision> verdicts;
  for (uint32_t i = 0; i < 5; ++i) verdicts.push_back({i, FileVerdict::unchanged});
  // A sender that knows its receiver said `peer`, its sync of `files` offered.
  auto syncing = [&](uint32_t peer) {
    SenderConfig scfg;
    scfg.root_hash = sum_root;
    scfg.peer = {peer, true};
    auto s = std::make_unique<Sender>(scfg);
    s->start(LaneTraits::tcp(), {LaneKind::tcp, "boot", "boot"}, t0);
    TransferSpec spec;
    spec.entries = files;
    spec.sync = with_sync();
    EXPECT_TRUE(s->start_transfer(std::move(spec), t0));
    return s;
  };
  for (const uint32_t peer : {11u, 10u}) {
    SCOPED_TRACE("a receiver that said " + std::to_string(peer));
    const auto sender = syncing(peer);
    Sender& s = *sender;
    const auto offers = drain<SendMessage>(s);
    ASSERT_EQ(offers.size(), 1u);
    // Bit 2 of the options byte, to a receiver that said 11 only.
    wire::Offer offer;
    ASSERT_TRUE(wire::decode(wire::encode_message(std::get<wire::Offer>(offers[0].msg)), offer));
    EXPECT_EQ(offer.verdicts_apart, peer >= 11);

    ReceiverConfig rcfg;
    rcfg.root_hash = sum_root;
    rcfg.verdicts_per_accept = 2;
    Receiver r(rcfg);
    r.start(LaneTraits::tcp(), t0);
    (void)r.poll_action();  // addresses
    r.handle_message(0, offer, t0);
    drain<PrepareOffer>(r);
    r.handle_offer_prepared(1, wire::Accept{1, {}, verdicts, 0, {}}, t0);
    const auto answers = drain<RecvSendMessage>(r);
    if (peer < 11) {
      ASSERT_EQ(answers.size(), 1u);
      const auto* no = std::get_if<wire::Refuse>(&answers[0].msg);
      ASSERT_NE(no, nullptr);
      EXPECT_NE(no->message.find("5 files here to compare"), std::string::npos) << no->message;
      EXPECT_NE(no->message.find("braid 11"), std::string::npos) << no->message;
      continue;
    }
    // 5 verdicts: all ahead of the accept, two a frame (2, 2, 1); the accept
    // keeps its room for held ranges and paths.
    ASSERT_EQ(answers.size(), 4u);
    const auto& first = std::get<wire::AcceptFiles>(answers[0].msg);
    EXPECT_EQ(first.files, (std::vector<wire::FileDecision>(verdicts.begin(), verdicts.begin() + 2)));
    EXPECT_EQ(std::get<wire::AcceptFiles>(answers[1].msg).files.size(), 2u);
    EXPECT_EQ(std::get<wire::AcceptFiles>(answers[2].msg).files.size(), 1u);
    EXPECT_TRUE(std::get<wire::Accept>(answers[3].msg).files.empty());
    // Two copies of the answer (to an offer sent again, on two lanes)
    // interleaved, each in its order: the verdicts are put together once.
    for (const size_t k : {0, 4, 5, 1, 2, 3, 6, 7})
      s.handle_message(k < 4 ? 0 : 1, through_wire(answers[k % 4].msg), t0);
    EXPECT_EQ(s.sync_files(), verdicts);
    EXPECT_EQ(s.kept_bytes(), 5 * MiB);
    ASSERT_NE(s.scheduler(), nullptr);  // the transfer goes on: f5 and f6 to send
    EXPECT_EQ(s.scheduler()->plan().delivered_bytes().count(), 5 * MiB);
    EXPECT_TRUE(drain<TransferEnded>(s).empty());
  }
  // An offer sent before the addresses, on a remembered protocol 11, to a
  // receiver now older: sent again, without the ask it cannot read.
  {
    const auto sender = syncing(11);
    Sender& s = *sender;
    ASSERT_TRUE(std::get<wire::Offer>(drain<SendMessage>(s).at(0).msg).verdicts_apart);
    s.handle_peer_protocol({10, true}, t0);
    const auto again = drain<SendMessage>(s);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_FALSE(std::get<wire::Offer>(again[0].msg).verdicts_apart);
    EXPECT_TRUE(drain<TransferEnded>(s).empty());
  }
  // Verdicts ahead are never empty, and in order.
  wire::AcceptFiles bad{1, {{3, FileVerdict::unchanged}, {1, FileVerdict::unchanged}}};
  wire::AcceptFiles back;
  EXPECT_FALSE(wire::decode(wire::encode_message(bad), back));
  bad.files.clear();
  EXPECT_FALSE(wire::decode(wire::encode_message(bad), back));
  bad.files = {{1, FileVerdict::older_here}, {3, FileVerdict::unchanged}};
  ASSERT_TRUE(wire::decode(wire::encode_message(bad), back));
  EXPECT_EQ(back, bad);
}

TEST(SyncMachines, AnOfferOfAnOlderProtocolIsRefusedWithTheReason) {
  Receiver r = started_receiver();
  auto o = three_files();
  o.version = 3;
  r.handle_message(0, o, t0);
  EXPECT_TRUE(drain<PrepareOffer>(r).empty());
  r.handle_message(0, o, t0);
  std::vector<RecvSendMessage> sent;
  while (auto a = r.poll_action())
    if (auto* m = std::get_if<RecvSendMessage>(&*a)) sent.push_back(*m);
  ASSERT_EQ(sent.size(), 1u);
  const auto& refuse = std::get<wire::Refuse>(sent[0].msg);
  EXPECT_EQ(refuse.reason, wire::RefuseReason::bad_offer);
  // Whatever this build's protocol is (it moves on; the lead renumbers merged branches).
  EXPECT_NE(refuse.message.find("protocol " + std::to_string(wire::kProtocolVersion) + ", the sender 3"),
            std::string::npos)
      << refuse.message;
}

}  // namespace
}  // namespace braid::session
