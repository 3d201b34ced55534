// What the receiver keeps on disk for resume: the transfer key, the held
// ranges, the journal (torn appends, revocations, the lock) and the recorder
// that appends a piece only once its bytes are durable.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include "engine/files/held_ranges.hpp"
#include "engine/files/held_verify.hpp"
#include "engine/files/receive_tree.hpp"
#include "engine/files/resume_journal.hpp"
#include "engine/files/resume_recorder.hpp"
#include "engine/files/transfer_key.hpp"

namespace braid::files {
namespace {

using wire::EntryKind;
using wire::ManifestEntry;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = std::filesystem::temp_directory_path().string() + "/braid-resume-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
    fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~TempDir() {
    ::close(fd_);
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  int fd() const { return fd_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

wire::Offer offer_of(uint64_t size) {
  wire::Offer o;
  o.transfer_id = 1;
  o.hash = wire::HashAlgo::xxh3_128;
  o.chunk_size = 1 << 16;
  o.entries = {{EntryKind::file, "big.bin", size, 0644, 1600000000, 5, ""}};
  return o;
}

std::vector<uint8_t> identity(uint8_t fill) { return std::vector<uint8_t>(32, fill); }

PieceRecord record(uint64_t offset, uint64_t length, uint8_t fill = 1) {
  PieceRecord r;
  r.offset = offset;
  r.length = length;
  r.hash.size = 16;
  r.hash.bytes.fill(fill);
  return r;
}

JournalParams params_of(const wire::Offer& o, uint8_t who = 7) {
  return JournalParams{transfer_key(o, identity(who)), o.hash, o.chunk_size, o.total_bytes()};
}

std::unique_ptr<ResumeJournal> open_journal(int dir, const JournalParams& p) {
  auto r = ResumeJournal::open(dir, p);
  if (auto* e = std::get_if<JournalError>(&r)) {
    ADD_FAILURE() << e->message;
    return nullptr;
  }
  return std::move(std::get<0>(r));
}

uint64_t size_of(const std::filesystem::path& p) { return std::filesystem::file_size(p); }

// ---- the key -------------------------------------------------------------------

/// Whether `key` of `o` changes when `edit` changes a copy of it.
template <class Key, class Edit>
bool key_changes(const wire::Offer& o, Key&& key, Edit&& edit) {
  wire::Offer x = o;
  edit(x);
  return key(x) != key(o);
}

TEST(TransferKey, NamesTheContentAndTheSender) {
  const wire::Offer o = offer_of(1000);
  const TransferKey k = transfer_key(o, identity(1));
  wire::Offer again = o;
  again.transfer_id = 42;  // another session's id: the same transfer
  EXPECT_EQ(transfer_key(again, identity(1)), k);
  EXPECT_NE(transfer_key(o, identity(2)), k);  // another sender
  auto changed = [&](auto&& edit) {
    return key_changes(o, [](const wire::Offer& x) { return transfer_key(x, identity(1)); }, edit);
  };
  EXPECT_TRUE(changed([](wire::Offer& x) { x.entries[0].size = 1001; }));
  EXPECT_TRUE(changed([](wire::Offer& x) { x.entries[0].mtime_nsec = 6; }));
  EXPECT_TRUE(changed([](wire::Offer& x) { x.entries[0].mode = 0600; }));
  EXPECT_TRUE(changed([](wire::Offer& x) { x.entries[0].path = "other.bin"; }));
  EXPECT_TRUE(changed([](wire::Offer& x) { x.chunk_size = 1 << 17; }));
  EXPECT_TRUE(changed([](wire::Offer& x) { x.hash = wire::HashAlgo::sha256; }));
  EXPECT_EQ(k.tag().size(), 16u);
  EXPECT_EQ(k.tag().find_first_not_of("0123456789abcdef"), std::string::npos);
}

// The second key, hashed as the parts of an offer answered part by part
// come: the same whatever the parts, and it tells apart what the first does.
TEST(TransferKey, TheRunningKeyIsTheSameInAnyPartsAndNamesWhatTheFirstNames) {
  wire::Offer whole = offer_of(1000);
  for (int i = 0; i < 2500; ++i) {
    whole.entries.push_back({EntryKind::file, "d/f" + std::to_string(i), uint64_t(i), 0644, i, 0, ""});
    if (i % 13 == 0) whole.entries.back().owner = wire::OwnerId{uint32_t(i), "someone"};
  }
  const TransferKey k = running_transfer_key(whole, identity(3));
  EXPECT_NE(k, transfer_key(whole, identity(3)));  // another version: another journal name
  for (const size_t step : {size_t{1}, size_t{700}, size_t{2501}}) {
    RunningKey parts;
    for (size_t from = 0; from < whole.entries.size(); from += step)
      parts.add(std::span<const ManifestEntry>(whole.entries).subspan(from, std::min(step, whole.entries.size() - from)));
    EXPECT_EQ(parts.entries(), whole.entries.size());
    EXPECT_EQ(parts.finish(wire::offer_fields(whole), identity(3)), k) << "parts of " << step;
  }
  wire::Offer sent = whole;  // another session, sent in parts, answered part by part: the same transfer
  sent.transfer_id = 42;
  sent.continued = true;
  sent.early_answers = true;
  EXPECT_EQ(running_transfer_key(sent, identity(3)), k);
  EXPECT_NE(running_transfer_key(whole, identity(2)), k);  // another sender
  EXPECT_NE(running_transfer_key(whole, identity(3), std::vector<uint32_t>{4}), k);  // other files kept (sync)
  auto changed = [&](auto&& edit) {
    return key_changes(whole, [](const wire::Offer& x) { return running_transfer_key(x, identity(3)); }, edit);
  };
  EXPECT_TRUE(changed([](wire::Offer& x) { x.entries[1800].size = 1; }));
  EXPECT_TRUE(changed([](wire::Offer& x) { x.entries[0].mtime_nsec = 6; }));
  EXPECT_TRUE(changed([](wire::Offer& x) { x.entries[7].mode = 0600; }));
  EXPECT_TRUE(changed([](wire::Offer& x) { x.entries[2499].path = "other.bin"; }));
  EXPECT_TRUE(changed([](wire::Offer& x) { x.entries[14].owner->id = 1; }));  // a detail (entry 14 is the 13th pushed)
  EXPECT_TRUE(changed([](wire::Offer& x) { x.entries.pop_back(); }));
  EXPECT_TRUE(changed([](wire::Offer& x) { std::swap(x.entries[3], x.entries[4]); }));  // another layout
  EXPECT_TRUE(changed([](wire::Offer& x) { x.chunk_size = 1 << 17; }));
  EXPECT_TRUE(changed([](wire::Offer& x) { x.hash = wire::HashAlgo::sha256; }));
}

// A whole offer's journal is looked for under both keys: one an older
// braid left goes by the first; a new one is made under the second.
TEST(TransferKey, AJournalUnderTheFirstKeyIsStillFound) {
  TempDir dir;
  const wire::Offer o = offer_of(1000);
  const TransferKey first = transfer_key(o, identity(4)), second = running_transfer_key(o, identity(4));
  EXPECT_EQ(ResumeJournal::key_for(dir.fd(), o, identity(4)), second);
  EXPECT_FALSE(ResumeJournal::exists(dir.fd(), first));
  {
    auto old = open_journal(dir.fd(), JournalParams{first, o.hash, o.chunk_size, o.total_bytes()});
    ASSERT_TRUE(old);
    EXPECT_TRUE(ResumeJournal::exists(dir.fd(), first));
    EXPECT_EQ(ResumeJournal::key_for(dir.fd(), o, identity(4)), first);
    EXPECT_EQ(ResumeJournal::key_for(dir.fd(), o, identity(5)), running_transfer_key(o, identity(5)));  // not its sender's
    ASSERT_TRUE(old->remove());
  }
  EXPECT_EQ(ResumeJournal::key_for(dir.fd(), o, identity(4)), second);
}

// The second key's bytes, pinned as the first's are: a journal must
// outlive an upgrade.
TEST(TransferKey, TheRunningKeyIsTheHashOfItsEntriesThenTheirCountThenTheFieldsAsBefore) {
  wire::Offer o = offer_of(1000);
  o.entries.push_back({EntryKind::directory, "d", 0, 0755, 3, 0, ""});
  o.entries.push_back({EntryKind::symlink, "d/l", 0, 0777, 3, 0, "f"});
  o.entries.back().owner = wire::OwnerId{9, "nine"};
  o.transfer_id = 9;
  const std::vector<uint32_t> kept = {2};
  std::vector<uint8_t> bytes;
  for (const char c : std::string_view("braid transfer key 2")) bytes.push_back(static_cast<uint8_t>(c));
  for (const auto& e : o.entries) {
    const wire::OfferPart part{0, 0, false, {e}};  // a part of this entry alone, less its head
    std::vector<uint8_t> enc;
    wire::encode(part, enc);
    bytes.insert(bytes.end(), enc.begin() + 9, enc.end());  // id, first entry, last flag
  }
  for (const uint8_t b : {0, 0, 0, 0, 0, 0, 0, 3}) bytes.push_back(b);
  wire::Offer fields = wire::offer_fields(o);
  fields.transfer_id = 0;
  wire::encode(fields, bytes);
  bytes.push_back(32);
  const std::vector<uint8_t> who = identity(5);
  bytes.insert(bytes.end(), who.begin(), who.end());
  for (const uint8_t b : {0, 0, 0, 2}) bytes.push_back(b);
  PieceHasher h(wire::HashAlgo::sha256);
  h.update(bytes);
  const wire::Digest d = h.finish();
  TransferKey expected;
  std::copy(d.bytes.begin(), d.bytes.begin() + 32, expected.bytes.begin());
  EXPECT_EQ(running_transfer_key(o, who, kept), expected);
}

TEST(TransferKey, IsTheHashOfTheOffersEncodingAsBefore) {
  // The key was SHA-256 over the whole encoding of a copy of the offer
  // (transfer id 0, early_answers off), then the identity's length and
  // bytes, then the kept entries; hashed as it is encoded now, it must not
  // change, or every interrupted transfer would lose its journal.
  wire::Offer o = offer_of(1000);
  o.transfer_id = 9;
  o.hash = wire::HashAlgo::sha256;
  o.sync.sync = true;
  o.sync.backup_suffix = "~";
  o.continued = true;
  o.early_answers = true;
  for (int i = 0; i < 3000; ++i) {  // an encoding of several streamed pieces (of 64 KiB)
    ManifestEntry e{EntryKind::file, "d/" + std::string(20, 'a') + std::to_string(i), uint64_t(i % 7 ? i : 0), 0640, i, 7, ""};
    if (i % 7 == 0) e.hard_link_to = 0;
    else if (i % 11 == 0) e.owner = wire::OwnerId{uint32_t(i), "someone"};
    o.entries.push_back(e);
  }
  const std::vector<uint32_t> kept = {3, 70000};
  wire::Offer copy = o;
  copy.transfer_id = 0;
  copy.early_answers = false;
  std::vector<uint8_t> bytes;
  wire::encode(copy, bytes);
  ASSERT_GT(bytes.size(), 2u * 64 * 1024);  // three streamed pieces or more
  bytes.push_back(32);
  const std::vector<uint8_t> who = identity(5);
  bytes.insert(bytes.end(), who.begin(), who.end());
  for (const uint8_t b : {0, 0, 0, 3, 0, 1, 0x11, 0x70}) bytes.push_back(b);
  PieceHasher h(wire::HashAlgo::sha256);
  h.update(bytes);
  const wire::Digest d = h.finish();
  TransferKey expected;
  std::copy(d.bytes.begin(), d.bytes.begin() + 32, expected.bytes.begin());
  EXPECT_EQ(transfer_key(o, who, kept), expected);
}

// ---- held ranges -------------------------------------------------------------------

TEST(HeldRanges, LaterRangesWinAndWritesEndWholeClaims) {
  HeldRanges h;
  h.add(record(0, 100));
  h.add(record(100, 100));
  h.add(record(300, 50));
  EXPECT_EQ(h.bytes(), 250u);
  h.add(record(150, 200, 2));  // overlaps the second and the third: both go
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h.records()[1].offset, 150u);
  EXPECT_EQ(h.bytes(), 300u);
  EXPECT_TRUE(h.overlaps(99, 1));
  EXPECT_FALSE(h.overlaps(100, 50));
  EXPECT_TRUE(h.overlaps(349, 10));
  EXPECT_FALSE(h.overlaps(350, 10));
  // One byte written inside a range ends the claim on the whole range.
  auto gone = h.remove_overlapping(10, 1);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_EQ(gone[0].length, 100u);
  EXPECT_EQ(h.bytes(), 200u);
  EXPECT_TRUE(h.remove_overlapping(0, 150).empty());
  EXPECT_EQ(h.remove_overlapping(0, UINT64_MAX).size(), 1u);  // no overflow at the end
  EXPECT_TRUE(h.empty());
}

// ---- the journal -------------------------------------------------------------------

TEST(ResumeJournal, RecordsSurviveAReopen) {
  TempDir dir;
  const auto p = params_of(offer_of(1 << 20));
  {
    auto j = open_journal(dir.fd(), p);
    ASSERT_TRUE(j);
    EXPECT_TRUE(j->loaded().empty());
    EXPECT_EQ(j->append_held({record(0, 65536), record(65536, 65536)}), 0);
    EXPECT_EQ(j->append_held({record(4 << 16, 1000)}), 0);
    EXPECT_EQ(j->append_revoked({record(65536, 65536)}), 0);
  }
  auto j = open_journal(dir.fd(), p);
  ASSERT_TRUE(j);
  const auto held = j->loaded().records();
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].offset, 0u);
  EXPECT_EQ(held[0].hash, record(0, 1).hash);
  EXPECT_EQ(held[1].offset, 4u << 16);
  EXPECT_EQ(held[1].length, 1000u);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / ResumeJournal::file_name(p.key)));
  EXPECT_EQ(ResumeJournal::file_name(p.key).rfind(".braid-resume-", 0), 0u);
}

TEST(ResumeJournal, ATornAppendEndsTheJournalThereForGood) {
  TempDir dir;
  const auto p = params_of(offer_of(1 << 20));
  const auto path = dir.path() / ResumeJournal::file_name(p.key);
  {
    auto j = open_journal(dir.fd(), p);
    ASSERT_EQ(j->append_held({record(0, 100), record(100, 100), record(200, 100)}), 0);
  }
  {
    // Flip a byte in the second record: it and the third must go.
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(ResumeJournal::kHeaderSize + ResumeJournal::kRecordSize + 20));
    f.put('\x55');
  }
  {
    auto j = open_journal(dir.fd(), p);
    ASSERT_EQ(j->loaded().size(), 1u);
    EXPECT_EQ(j->dropped_records(), 2u);
    // The file was cut after the good record, so a new append cannot bring the third back.
    EXPECT_EQ(size_of(path), ResumeJournal::kHeaderSize + ResumeJournal::kRecordSize);
    ASSERT_EQ(j->append_held({record(500, 10)}), 0);
  }
  auto j = open_journal(dir.fd(), p);
  const auto held = j->loaded().records();
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[1].offset, 500u);
  // Half a record at the end (a crash during the write) is dropped too.
  j.reset();
  {
    std::ofstream f(path, std::ios::app | std::ios::binary);
    f << std::string(30, 'x');
  }
  j = open_journal(dir.fd(), p);
  EXPECT_EQ(j->loaded().size(), 2u);
}

TEST(ResumeJournal, AnotherTransfersJournalStartsOver) {
  TempDir dir;
  const wire::Offer o = offer_of(1 << 20);
  auto p = params_of(o);
  {
    auto j = open_journal(dir.fd(), p);
    ASSERT_EQ(j->append_held({record(0, 100)}), 0);
  }
  // Same file name, other parameters (a stale journal renamed, or a tag collision).
  JournalParams other = p;
  other.chunk_size = 1 << 17;
  {
    auto j = open_journal(dir.fd(), other);
    EXPECT_TRUE(j->loaded().empty());
  }
  // The header was rewritten for `other`: the first parameters find nothing either.
  auto j = open_journal(dir.fd(), p);
  EXPECT_TRUE(j->loaded().empty());
}

TEST(ResumeJournal, RangesOutsideTheTransferOrWithTheWrongHashSizeEndTheJournal) {
  TempDir dir;
  const auto p = params_of(offer_of(1000));
  {
    auto j = open_journal(dir.fd(), p);
    ASSERT_EQ(j->append_held({record(0, 10), record(990, 20), record(20, 10)}), 0);
  }
  {
    auto j = open_journal(dir.fd(), p);
    EXPECT_EQ(j->loaded().size(), 1u);
    PieceRecord sha = record(20, 10);
    sha.hash.size = 32;  // the offer's hash is XXH3-128
    ASSERT_EQ(j->append_held({sha, record(40, 10)}), 0);
  }
  auto j = open_journal(dir.fd(), p);
  EXPECT_EQ(j->loaded().size(), 1u);
}

TEST(ResumeJournal, ASecondOpenIsBusy) {
  TempDir dir;
  const auto p = params_of(offer_of(1000));
  auto first = open_journal(dir.fd(), p);
  ASSERT_TRUE(first);
  auto second = ResumeJournal::open(dir.fd(), p);
  ASSERT_TRUE(std::holds_alternative<JournalError>(second));
  EXPECT_TRUE(std::get<JournalError>(second).busy);
  first.reset();
  EXPECT_FALSE(std::holds_alternative<JournalError>(ResumeJournal::open(dir.fd(), p)));
}

TEST(ResumeJournal, AnOpenWaitsForASessionThatLetsGo) {
  TempDir dir;
  const auto p = params_of(offer_of(1000));
  const auto path = dir.path() / ResumeJournal::file_name(p.key);
  auto first = open_journal(dir.fd(), p);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->append_held({record(0, 500)}), 0);
  // The holder commits and lets go a little later, as a session whose sender just died.
  std::thread ending([&] {
    ::usleep(150000);
    first.reset();
  });
  auto second = ResumeJournal::open(dir.fd(), p, std::chrono::seconds(5));
  ending.join();
  ASSERT_FALSE(std::holds_alternative<JournalError>(second));
  EXPECT_EQ(std::get<0>(second)->loaded().size(), 1u);
  // A journal its holder removes before letting go is not used as the unlinked file: a new one is made.
  std::thread completing([&] {
    ::usleep(150000);
    EXPECT_TRUE(std::get<0>(second)->remove());
    std::get<0>(second).reset();
  });
  auto third = ResumeJournal::open(dir.fd(), p, std::chrono::seconds(5));
  completing.join();
  ASSERT_FALSE(std::holds_alternative<JournalError>(third));
  EXPECT_TRUE(std::get<0>(third)->loaded().empty());
  EXPECT_TRUE(std::filesystem::exists(path));
  // The wait is bounded, and a cancel ends it early.
  std::atomic<bool> cancel{true};
  const auto began = std::chrono::steady_clock::now();
  auto fourth = ResumeJournal::open(dir.fd(), p, std::chrono::seconds(30), &cancel);
  ASSERT_TRUE(std::holds_alternative<JournalError>(fourth));
  EXPECT_TRUE(std::get<JournalError>(fourth).busy);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
}

TEST(ResumeJournal, RewriteKeepsExactlyWhatIsGivenAndRemoveDeletes) {
  TempDir dir;
  const auto p = params_of(offer_of(1 << 20));
  const auto path = dir.path() / ResumeJournal::file_name(p.key);
  {
    auto j = open_journal(dir.fd(), p);
    ASSERT_EQ(j->append_held({record(0, 100), record(100, 100), record(200, 100)}), 0);
    ASSERT_EQ(j->rewrite({record(100, 100)}), 0);
  }
  {
    auto j = open_journal(dir.fd(), p);
    ASSERT_EQ(j->loaded().size(), 1u);
    EXPECT_EQ(j->loaded().records()[0].offset, 100u);
    EXPECT_TRUE(j->remove());
    EXPECT_EQ(j->append_held({record(0, 1)}), 0);  // a no-op now
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

// ---- the recorder ------------------------------------------------------------------

struct Prepared {
  wire::Offer offer = offer_of(1 << 20);
  JournalParams params = params_of(offer);
  std::unique_ptr<ReceiveTree> tree;
};

Prepared prepare(const TempDir& dir, bool keep_parts = false) {
  Prepared p;
  auto t = ReceiveTree::prepare(dir.fd(), p.offer, PrepareOptions{p.params.key.tag(), keep_parts, 0});
  if (auto* e = std::get_if<PrepareError>(&t)) ADD_FAILURE() << e->message;
  else p.tree = std::move(std::get<0>(t));
  return p;
}

TEST(ResumeRecorder, APieceIsClaimedOnlyAtACommit) {
  TempDir dir;
  Prepared p = prepare(dir);
  const auto path = dir.path() / ResumeJournal::file_name(p.params.key);
  {
    ResumeRecorder rec(open_journal(dir.fd(), p.params), *p.tree, {}, RecorderOptions{std::chrono::hours(1), 1ull << 40});
    std::vector<uint8_t> bytes(65536, 0xAB);
    ASSERT_EQ(p.tree->write(0, bytes), 0);
    rec.verified(record(0, 65536));
    // Not durable yet, so not in the journal: a crash now loses the piece, never claims it.
    EXPECT_EQ(size_of(path), ResumeJournal::kHeaderSize);
    EXPECT_EQ(rec.claimed_bytes(), 0u);  // what a report may promise the next run
    rec.commit();
    EXPECT_EQ(size_of(path), ResumeJournal::kHeaderSize + ResumeJournal::kRecordSize);
    EXPECT_EQ(rec.claimed_bytes(), 65536u);
    rec.verified(record(65536, 65536));
  }  // the destructor's last commit (a session that ends) records the second piece
  auto j = open_journal(dir.fd(), p.params);
  EXPECT_EQ(j->loaded().size(), 2u);
}

TEST(ResumeRecorder, TheBackgroundThreadCommitsABatch) {
  TempDir dir;
  Prepared p = prepare(dir);
  const auto path = dir.path() / ResumeJournal::file_name(p.params.key);
  ResumeRecorder rec(open_journal(dir.fd(), p.params), *p.tree, {}, RecorderOptions{std::chrono::hours(1), 100000});
  rec.verified(record(0, 65536));
  rec.verified(record(65536, 65536));  // over batch_bytes: committed without waiting for the interval
  for (int i = 0; i < 200 && size_of(path) == ResumeJournal::kHeaderSize; ++i) ::usleep(10000);
  EXPECT_EQ(size_of(path), ResumeJournal::kHeaderSize + 2 * ResumeJournal::kRecordSize);
}

TEST(ResumeRecorder, WritingOverAHeldRangeRevokesItFirst) {
  TempDir dir;
  Prepared p = prepare(dir);
  auto journal = open_journal(dir.fd(), p.params);
  ASSERT_EQ(journal->append_held({record(0, 65536), record(65536, 65536)}), 0);
  HeldRanges held = journal->loaded();
  {
    ResumeRecorder rec(std::move(journal), *p.tree, held);
    EXPECT_EQ(rec.held_bytes(), 0u);  // `held` was read before the appends
  }
  journal = open_journal(dir.fd(), p.params);
  held = journal->loaded();
  ASSERT_EQ(held.size(), 2u);
  {
    ResumeRecorder rec(std::move(journal), *p.tree, held);
    EXPECT_EQ(rec.held_bytes(), 131072u);
    EXPECT_TRUE(rec.before_write(70000, 10));  // inside the second range
    EXPECT_EQ(rec.held_bytes(), 65536u);
    EXPECT_TRUE(rec.before_write(200000, 10));  // nothing held there
    // Once the journal is closed (the transfer failed), it still claims the
    // first range on disk: bytes must not go there any more.
    rec.stop();
    EXPECT_FALSE(rec.before_write(10, 10));
  }
  journal = open_journal(dir.fd(), p.params);
  ASSERT_EQ(journal->loaded().size(), 1u);
  EXPECT_EQ(journal->loaded().records()[0].offset, 0u);
}

TEST(ResumeRecorder, CompleteDeletesTheJournalAndDiscardToo) {
  TempDir dir;
  Prepared p = prepare(dir);
  const auto path = dir.path() / ResumeJournal::file_name(p.params.key);
  {
    ResumeRecorder rec(open_journal(dir.fd(), p.params), *p.tree, {});
    rec.verified(record(0, 65536));
    rec.halt();  // as the receiver does before it puts the files in place
    EXPECT_EQ(size_of(path), ResumeJournal::kHeaderSize + ResumeJournal::kRecordSize);
    rec.complete();
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  {
    ResumeRecorder rec(open_journal(dir.fd(), p.params), *p.tree, {});
    rec.discard("root hash mismatch");
    EXPECT_EQ(rec.error(), "root hash mismatch");
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

// ---- the temporary files --------------------------------------------------------------

TEST(ReceiveTreeResume, KeepsAnExistingPartOnlyWhenAsked) {
  TempDir dir;
  Prepared first = prepare(dir);
  std::vector<uint8_t> bytes(1000, 0x5A);
  ASSERT_EQ(first.tree->write(0, bytes), 0);
  EXPECT_FALSE(first.tree->part_kept(0));
  first.tree.reset();
  Prepared kept = prepare(dir, true);
  EXPECT_TRUE(kept.tree->part_kept(0));
  const auto part = dir.path() / kept.tree->temp_path(0);
  {
    std::ifstream f(part, std::ios::binary);
    EXPECT_EQ(f.get(), 0x5A);  // the bytes are still there
  }
  kept.tree.reset();
  Prepared fresh = prepare(dir, false);
  // A fresh start reuses nothing: the file is made anew (truncated) when
  // its first bytes come, wherever they go in it.
  ASSERT_EQ(fresh.tree->write(500, std::vector<uint8_t>(10, 0x33)), 0);
  std::ifstream f(part, std::ios::binary);
  EXPECT_EQ(f.get(), 0);
  EXPECT_EQ(size_of(part), 1u << 20);
}

TEST(ReceiveTreeResume, ATagMustBeHex) {
  TempDir dir;
  const wire::Offer o = offer_of(10);
  auto t = ReceiveTree::prepare(dir.fd(), o, PrepareOptions{"../x", false, 0});
  EXPECT_TRUE(std::holds_alternative<PrepareError>(t));
}

// ---- staged directories (many files into a directory that is not there yet) -----------

// A tree "t" of `n` files of 100 bytes in t/a and t/a/b, and "top.bin" beside it.
wire::Offer staged_offer(size_t n) {
  wire::Offer o;
  o.transfer_id = 1;
  o.hash = wire::HashAlgo::xxh3_128;
  o.chunk_size = 1 << 16;
  o.entries = {{EntryKind::directory, "t", 0, 0750, 1500000000, 0, ""},
               {EntryKind::directory, "t/a", 0, 0755, 1500000001, 0, ""},
               {EntryKind::directory, "t/a/b", 0, 0755, 1500000002, 0, ""},
               {EntryKind::file, "top.bin", 100, 0644, 1600000000, 0, ""}};
  for (size_t i = 0; i < n; ++i)
    o.entries.push_back({EntryKind::file, (i % 2 ? "t/a/f" : "t/a/b/f") + std::to_string(i), 100, 0640,
                         1600000000 + static_cast<int64_t>(i), 7, ""});
  return o;
}

TEST(ReceiveTreeStaged, ANewDirectoryOfManyFilesArrivesWholeByOneRename) {
  TempDir dir;
  const wire::Offer o = staged_offer(300);
  auto p = ReceiveTree::prepare(dir.fd(), o, PrepareOptions{"00000000000000ab", false, 0});
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<ReceiveTree>>(p));
  auto t = std::move(std::get<0>(p));
  EXPECT_EQ(t->staged_directories(), 1u);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "t"));  // nothing under its final path yet
  EXPECT_EQ(t->temp_path(4), ".braid-00000000000000ab-0.dir/a/b/f0");
  EXPECT_EQ(t->temp_path(3), ".braid-00000000000000ab-3.part");  // beside the tree: a file of its own
  // Every byte once, out of order; the last file short of one byte.
  const uint64_t total = 100 * o.entries.size() - 100 * 3;
  std::vector<uint8_t> bytes(total, 0x41);
  ASSERT_EQ(t->write(total / 2, std::span(bytes).subspan(total / 2, total / 2 - 1)), 0);
  ASSERT_EQ(t->write(0, std::span(bytes).first(total / 2)), 0);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "t"));
  ASSERT_EQ(t->write(total - 1, std::span(bytes).last(1)), 0);
  int err = 0;
  ASSERT_EQ(t->finalize(err), "");
  t.reset();
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_FALSE(e.path().filename().string().starts_with(".braid-")) << e.path();
  for (size_t i = 3; i < o.entries.size(); ++i) {
    const auto& e = o.entries[i];
    struct stat st {};
    ASSERT_EQ(::stat((dir.path() / e.path).c_str(), &st), 0) << e.path;
    EXPECT_EQ(st.st_size, 100);
    EXPECT_EQ(st.st_mode & 07777, e.mode) << e.path;
    EXPECT_EQ(st.st_mtim.tv_sec, e.mtime_sec) << e.path;
    EXPECT_EQ(st.st_mtim.tv_nsec, e.mtime_nsec) << e.path;
  }
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() / "t").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  EXPECT_EQ(st.st_mtim.tv_sec, 1500000000);
}

TEST(ReceiveTreeStaged, AResumeFindsTheStagedDirectoryAgain) {
  TempDir dir;
  const wire::Offer o = staged_offer(300);
  const PrepareOptions fresh{"00000000000000cd", false, 0}, resume{"00000000000000cd", true, 0};
  {
    auto t = std::move(std::get<0>(ReceiveTree::prepare(dir.fd(), o, fresh)));
    ASSERT_EQ(t->write(0, std::vector<uint8_t>(250, 0x5A)), 0);  // top.bin, f0 and half of f1
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "t"));
  EXPECT_EQ(size_of(dir.path() / ".braid-00000000000000cd-0.dir/a/f1"), 100u);
  auto t = std::move(std::get<0>(ReceiveTree::prepare(dir.fd(), o, resume)));
  EXPECT_EQ(t->staged_directories(), 1u);
  EXPECT_TRUE(t->part_kept(5));
  std::vector<uint8_t> back(250);
  ASSERT_EQ(t->read(0, back), 0);
  EXPECT_EQ(back, std::vector<uint8_t>(250, 0x5A));
  const uint64_t total = 100 * (o.entries.size() - 3);
  ASSERT_EQ(t->write(250, std::vector<uint8_t>(total - 250, 0x5A)), 0);
  int err = 0;
  ASSERT_EQ(t->finalize(err), "");
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() / "t/a/f1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mtim.tv_sec, 1600000001);  // set at finalize: a resumed file's bytes were not all written here
  EXPECT_FALSE(std::filesystem::exists(dir.path() / ".braid-00000000000000cd-0.dir"));
}

TEST(ReceiveTreeStaged, AnExistingDirectoryOrAFewFilesAreNotStaged) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "t/a");
  auto t = std::move(std::get<0>(ReceiveTree::prepare(dir.fd(), staged_offer(300), PrepareOptions{"00000000000000ef", false, 0})));
  EXPECT_EQ(t->staged_directories(), 1u);  // t/a/b only
  EXPECT_EQ(t->temp_path(5), "t/a/.braid-00000000000000ef-5.part");
  EXPECT_EQ(t->temp_path(4), "t/a/.braid-00000000000000ef-2.dir/f0");
  t.reset();
  TempDir other;
  auto few = std::move(std::get<0>(ReceiveTree::prepare(other.fd(), staged_offer(10), PrepareOptions{"00000000000000ef", false, 0})));
  EXPECT_EQ(few->staged_directories(), 0u);
}

// ---- part by part (protocol 9) ---------------------------------------------------

/// A part as the session machine hands it over: shared, never changed.
wire::EntryParts::Part shared(std::vector<ManifestEntry> entries) {
  return std::make_shared<const std::vector<ManifestEntry>>(std::move(entries));
}

wire::EntryParts::Part slice(const wire::Offer& o, size_t from, size_t to) {
  return shared(std::vector<ManifestEntry>(o.entries.begin() + static_cast<ptrdiff_t>(from),
                                           o.entries.begin() + static_cast<ptrdiff_t>(to)));
}

TEST(ReceiveTreeParts, ATreeMadePartByPartIsTheWholeOnesTwin) {
  TempDir dir;
  const auto whole = std::make_shared<const wire::Offer>(staged_offer(300));
  wire::Offer head = *whole;
  head.entries.clear();
  auto t = std::move(std::get<0>(ReceiveTree::begin_parts(dir.fd(), head, PrepareOptions{"00000000000000ab", false, 0})));
  EXPECT_EQ(t->total(), 0u);
  ASSERT_FALSE(t->add_part(0, slice(*whole, 0, 100)));
  EXPECT_EQ(t->total(), 100u * 97);  // top.bin and f0..f95
  // The first part's pieces may land before the next part comes.
  ASSERT_EQ(t->write(0, std::vector<uint8_t>(100 * 97, 0x41)), 0);
  ASSERT_FALSE(t->add_part(100, slice(*whole, 100, 250)));
  ASSERT_FALSE(t->add_part(250, slice(*whole, 250, whole->entries.size())));
  ASSERT_FALSE(t->close_parts(std::make_shared<const wire::Offer>(head)));
  EXPECT_EQ(t->parts().size(), whole->entries.size());
  EXPECT_EQ(t->parts().total_bytes(), whole->total_bytes());
  const uint64_t total = 100 * (whole->entries.size() - 3);
  EXPECT_EQ(t->total(), total);
  // Named as a whole offer's tree names them: a resume prepared whole finds them.
  EXPECT_EQ(t->staged_directories(), 1u);
  EXPECT_EQ(t->temp_path(4), ".braid-00000000000000ab-0.dir/a/b/f0");
  EXPECT_EQ(t->temp_path(3), ".braid-00000000000000ab-3.part");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "t"));
  ASSERT_EQ(t->write(100 * 97, std::vector<uint8_t>(total - 100 * 97, 0x41)), 0);
  int err = 0;
  ASSERT_EQ(t->finalize(err), "");
  t.reset();
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_FALSE(e.path().filename().string().starts_with(".braid-")) << e.path();
  for (size_t i = 3; i < whole->entries.size(); ++i) {
    struct stat st {};
    ASSERT_EQ(::stat((dir.path() / whole->entries[i].path).c_str(), &st), 0) << whole->entries[i].path;
    EXPECT_EQ(st.st_size, 100);
    EXPECT_EQ(st.st_mtim.tv_sec, whole->entries[i].mtime_sec);
  }
}

TEST(ReceiveTreeParts, EachPartIsCheckedAgainstThePartsBeforeIt) {
  auto refused = [](std::vector<std::vector<ManifestEntry>> parts) {
    TempDir dir;
    auto t = std::move(std::get<0>(ReceiveTree::begin_parts(dir.fd(), wire::Offer{}, PrepareOptions{"00000000000000ab", false, 0})));
    size_t first = 0;
    for (auto& p : parts) {
      const size_t n = p.size();
      if (auto err = t->add_part(first, shared(std::move(p)))) return err->message;
      first += n;
    }
    return std::string();
  };
  const ManifestEntry dir{EntryKind::directory, "d", 0, 0755, 0, 0, ""};
  const ManifestEntry file{EntryKind::file, "d/f", 3, 0644, 0, 0, ""};
  EXPECT_EQ(refused({{dir, file}, {{EntryKind::file, "d/g", 3, 0644, 0, 0, ""}}}), "");
  EXPECT_NE(refused({{dir, file}, {file}}).find("twice"), std::string::npos);
  EXPECT_NE(refused({{{EntryKind::file, "d", 1, 0644, 0, 0, ""}}, {file}}).find("does not send as a directory"),
            std::string::npos);
  // A file whose path an earlier entry lies beneath.
  EXPECT_NE(refused({{file}, {{EntryKind::file, "d", 1, 0644, 0, 0, ""}}}).find("does not send as a directory"),
            std::string::npos);
  EXPECT_NE(refused({{dir}, {{EntryKind::file, "../x", 1, 0644, 0, 0, ""}}}).find("refused a path"), std::string::npos);
  ManifestEntry link{EntryKind::file, "d/h", 0, 0644, 0, 0, ""};
  link.hard_link_to = 1;  // d/f, in the part before: fine
  EXPECT_EQ(refused({{dir, file}, {link}}), "");
  link.hard_link_to = 0;  // a directory
  EXPECT_NE(refused({{dir, file}, {link}}).find("no earlier file"), std::string::npos);
}

/// Every entry of `offer` stands beneath `root` with its mtime and (but a
/// link's) its mode; each file holds `fill` repeated (nullopt: its size).
void expect_made_as_offered(const std::filesystem::path& root, const wire::Offer& offer, std::optional<char> fill) {
  for (const auto& e : offer.entries) {
    struct stat st {};
    const std::string at = (root / e.path).string();
    ASSERT_EQ(::lstat(at.c_str(), &st), 0) << e.path;
    EXPECT_EQ(st.st_mtim.tv_sec, e.mtime_sec) << e.path;
    if (e.kind == EntryKind::symlink) continue;
    EXPECT_EQ(st.st_mode & 07777, e.mode) << e.path;
    if (e.kind != EntryKind::file) continue;
    if (!fill) {
      EXPECT_EQ(static_cast<uint64_t>(st.st_size), e.size) << e.path;
      continue;
    }
    std::ifstream in(at, std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), std::string(e.size, *fill)) << e.path;
  }
}

// An offer in path order (protocol 10): the tree lets go of the parts
// whose bytes are all verified, forgets the files it has nothing left to do
// for, copies the entries finalize still needs, and the tree arrives as a
// tree that kept every entry would have made it.
wire::Offer ordered_offer() {
  wire::Offer o;
  o.transfer_id = 1;
  o.chunk_size = 1 << 16;
  o.continued = o.early_answers = o.ordered = true;
  auto add = [&](EntryKind kind, std::string path, uint64_t size, uint32_t mode, int64_t mtime) {
    o.entries.push_back({kind, std::move(path), size, mode, mtime, 0, ""});
  };
  add(EntryKind::directory, "t", 0, 0750, 1500000000);
  add(EntryKind::directory, "t/a", 0, 0755, 1500000001);
  for (int i = 0; i < 60; ++i) add(EntryKind::file, "t/a/f" + std::to_string(100 + i), 100, 0640, 1600000000 + i);
  add(EntryKind::file, "t/a/g-empty", 0, 0644, 1600000100);  // nothing to write: made at finalize
  add(EntryKind::file, "t/a/h-readonly", 100, 0444, 1600000101);  // its mode is set at finalize
  add(EntryKind::symlink, "t/a/l", 0, 0777, 1600000102);
  o.entries.back().link_target = "f100";
  add(EntryKind::directory, "t/b", 0, 0700, 1500000003);
  for (int i = 0; i < 60; ++i) add(EntryKind::file, "t/b/f" + std::to_string(100 + i), 100, 0600, 1600000200 + i);
  return o;
}

TEST(ReceiveTreeOrdered, PartsWrittenAndVerifiedAreLetGoAndTheTreeArrivesWhole) {
  TempDir dir;
  const wire::Offer whole = ordered_offer();
  wire::Offer head = wire::offer_fields(whole);
  auto t = std::move(std::get<0>(ReceiveTree::begin_parts(dir.fd(), head, PrepareOptions{"00000000000000ab", false, 0})));
  const size_t n = whole.entries.size();
  std::vector<std::weak_ptr<const std::vector<ManifestEntry>>> parts;
  for (size_t from = 0; from < n; from += 20) {
    auto part = slice(whole, from, std::min(n, from + 20));
    parts.push_back(part);
    ASSERT_FALSE(t->add_part(from, std::move(part)));
  }
  // Parts 0 to 2: t, t/a, f100 … f157 — 5,800 bytes.
  const uint64_t first_three = 58 * 100;
  ASSERT_EQ(t->write(0, std::vector<uint8_t>(first_three, 'A')), 0);
  EXPECT_EQ(t->release_written(0), 0u);
  EXPECT_FALSE(parts[0].expired());
  // The third part's last byte is not verified yet: the first two go.
  EXPECT_EQ(t->release_written(first_three - 1), 38u);
  EXPECT_TRUE(parts[0].expired() && parts[1].expired());
  EXPECT_FALSE(parts[2].expired());
  EXPECT_EQ(t->release_written(first_three), 20u);
  EXPECT_TRUE(parts[2].expired());
  EXPECT_FALSE(parts[3].expired());
  EXPECT_EQ(t->entries_copied(), 2u);  // t and t/a: finalize sets their modes and mtimes
  // A late copy of a piece over files forgotten is dropped: their bytes are on disk.
  ASSERT_EQ(t->write(0, std::vector<uint8_t>(300, 'B')), 0);
  // The rest, with one piece written twice before its part goes: that
  // file and the empty one are settled as they go (their mtime; made), so
  // they are forgotten too.
  const uint64_t total = t->total();
  ASSERT_EQ(total, 121u * 100);
  ASSERT_EQ(t->write(first_three, std::vector<uint8_t>(total - first_three, 'A')), 0);
  ASSERT_EQ(t->write(total - 100, std::vector<uint8_t>(100, 'A')), 0);  // t/b/f159 twice
  EXPECT_EQ(t->entries_held(), 68u);  // the 66 entries of the parts not let go, and the copies of t and t/a
  EXPECT_EQ(t->release_written(total), 63u);
  EXPECT_EQ(t->entries_forgotten(), 121u);
  // t, t/a, t/b, the link and the read-only file: finalize sets or makes
  // them (a read-only file waits for it: a resume or a cleanup by a user
  // who is not root must still be able to open it for writing).
  EXPECT_EQ(t->entries_copied(), 5u);
  EXPECT_EQ(t->entries_held(), 5u);  // nothing else is kept of the 126 entries
  // The places of "" (t's), t (t/a's and t/b's) and t/a (the link's and
  // the read-only file's); t/b's went with its last file.
  EXPECT_EQ(t->directories_held(), 3u);
  for (const auto& p : parts) EXPECT_TRUE(p.expired());
  // A later copy of any byte is dropped: the read-only file keeps its mode
  // and mtime, the one written twice its mtime.
  ASSERT_EQ(t->write(0, std::vector<uint8_t>(total, 'C')), 0);
  ASSERT_FALSE(t->close_parts(std::make_shared<const wire::Offer>(head)));
  int err = 0;
  ASSERT_EQ(t->finalize(err), "") << std::strerror(err);
  t.reset();
  expect_made_as_offered(dir.path(), whole, 'A');
  EXPECT_EQ(std::filesystem::read_symlink(dir.path() / "t/a/l"), "f100");
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path()))
    EXPECT_FALSE(e.path().filename().string().starts_with(".braid-")) << e.path();
}

// A directory the walk has left, whose every entry beneath is settled, is
// settled too (owner, xattrs, mode, mtime) and forgotten, from the leaves
// up: a tree of many directories costs the receiver no more than one of
// few. One with a link beneath it waits for finalize, which makes the link.
TEST(ReceiveTreeOrdered, DirectoriesTheWalkHasLeftAreSettledFromTheLeavesUp) {
  TempDir dir;
  wire::Offer whole;
  whole.transfer_id = 1;
  whole.chunk_size = 1 << 16;
  whole.continued = whole.early_answers = whole.ordered = true;
  std::vector<size_t> cuts;  // where each part begins
  auto add = [&](EntryKind kind, std::string path, uint64_t size, uint32_t mode, int64_t mtime) {
    whole.entries.push_back({kind, std::move(path), size, mode, mtime, 0, ""});
  };
  cuts.push_back(whole.entries.size());
  add(EntryKind::directory, "t", 0, 0750, 1500000000);
  add(EntryKind::directory, "t/a", 0, 0755, 1500000001);
  for (int i = 0; i < 20; ++i) add(EntryKind::file, "t/a/f" + std::to_string(10 + i), 50, 0644, 1600000000 + i);
  cuts.push_back(whole.entries.size());
  add(EntryKind::directory, "t/a/sub", 0, 0700, 1500000002);
  for (int i = 0; i < 5; ++i) add(EntryKind::file, "t/a/sub/g" + std::to_string(i), 50, 0600, 1600000100 + i);
  cuts.push_back(whole.entries.size());
  add(EntryKind::directory, "t/b", 0, 0711, 1500000003);
  add(EntryKind::directory, "t/b/e", 0, 0700, 1500000004);  // empty
  for (int i = 0; i < 10; ++i) add(EntryKind::file, "t/b/h" + std::to_string(i), 50, 0640, 1600000200 + i);
  cuts.push_back(whole.entries.size());
  add(EntryKind::directory, "t/c", 0, 0755, 1500000005);
  for (int i = 0; i < 10; ++i) add(EntryKind::file, "t/c/i" + std::to_string(i), 50, 0644, 1600000300 + i);
  add(EntryKind::symlink, "t/c/link", 0, 0777, 1600000400);
  whole.entries.back().link_target = "i0";
  cuts.push_back(whole.entries.size());
  // Read-only: left to finalize (a resume reopens what is staged, a cleanup removes it).
  add(EntryKind::directory, "t/r", 0, 0555, 1500000006);
  add(EntryKind::file, "t/r/x", 50, 0444, 1600000500);
  cuts.push_back(whole.entries.size());
  add(EntryKind::file, "t/z", 50, 0644, 1600000600);
  cuts.push_back(whole.entries.size());

  auto t = std::move(std::get<0>(
      ReceiveTree::begin_parts(dir.fd(), wire::offer_fields(whole), PrepareOptions{"00000000000000ab", false, 0})));
  // Each part is added, written whole and verified, then let go.
  // Held after each: the directories the walk is in (copies), and what waits for finalize.
  const std::vector<size_t> held_after = {
      2,  // t, t/a
      3,  // and t/a/sub
      2,  // t/b is come to: t/a/sub, then t/a, are settled, and t/b/e (empty) with them; t, t/b
      3,  // t/c is come to: t/b goes; t, t/c, its link
      5,  // t/r is come to: t/c stays for its link; t/r and t/r/x wait for finalize
      5,  // t/z is come to and forgotten
  };
  uint64_t written = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    ASSERT_FALSE(t->add_part(cuts[k], slice(whole, cuts[k], cuts[k + 1])));
    ASSERT_EQ(t->write(written, std::vector<uint8_t>(t->total() - written, 'D')), 0);
    written = t->total();
    (void)t->release_written(written);
    EXPECT_EQ(t->entries_held(), held_after[k]) << "after part " << k;
  }
  EXPECT_EQ(t->entries_forgotten(), whole.entries.size() - 5);
  EXPECT_EQ(t->directories_held(), 4u);  // "" (t's), t (t/c's, t/r's), t/c (the link's), t/r (its file's)
  // Nothing staged was made read-only before finalize: a resume reopens
  // every file of it for writing, a cleanup removes it, as any user.
  size_t staged = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir.path())) {
    struct stat st {};
    ASSERT_EQ(::lstat(f.path().c_str(), &st), 0);
    if (S_ISLNK(st.st_mode)) continue;
    EXPECT_EQ(st.st_mode & (S_ISDIR(st.st_mode) ? 0700 : 0600), S_ISDIR(st.st_mode) ? 0700u : 0600u) << f.path();
    ++staged;
  }
  EXPECT_EQ(staged, whole.entries.size() - 1);  // all but the link, made at finalize
  ASSERT_FALSE(t->close_parts(std::make_shared<const wire::Offer>(wire::offer_fields(whole))));
  int err = 0;
  ASSERT_EQ(t->finalize(err), "") << std::strerror(err);
  t.reset();
  expect_made_as_offered(dir.path(), whole, std::nullopt);
  EXPECT_EQ(std::filesystem::read_symlink(dir.path() / "t/c/link"), "i0");
  ::chmod((dir.path() / "t/r").c_str(), 0700);  // to be removed
}

TEST(ReceiveTreeOrdered, AnOfferOutOfOrderOrWithAHardLinkIsRefused) {
  auto refused = [](std::vector<ManifestEntry> entries) {
    TempDir dir;
    wire::Offer head;
    head.continued = head.early_answers = head.ordered = true;
    auto t = std::move(std::get<0>(ReceiveTree::begin_parts(dir.fd(), head, PrepareOptions{"00000000000000ab", false, 0})));
    const size_t k = entries.size() / 2;
    if (auto err = t->add_part(0, shared({entries.begin(), entries.begin() + static_cast<ptrdiff_t>(k)}))) return err->message;
    auto err = t->add_part(k, shared({entries.begin() + static_cast<ptrdiff_t>(k), entries.end()}));
    return err ? err->message : std::string();
  };
  const ManifestEntry d{EntryKind::directory, "d", 0, 0755, 0, 0, ""};
  const ManifestEntry f{EntryKind::file, "d/f", 3, 0644, 0, 0, ""}, g{EntryKind::file, "d/g", 3, 0644, 0, 0, ""};
  EXPECT_EQ(refused({d, f, g}), "");
  EXPECT_NE(refused({d, g, f}).find("not in path order"), std::string::npos);
  EXPECT_NE(refused({d, f, f}).find("names 'd/f' twice"), std::string::npos);
  ManifestEntry link = g;
  link.hard_link_to = 1;  // fine without the order (ReceiveTreeParts above), not in it
  EXPECT_NE(refused({d, f, link}).find("no hard links"), std::string::npos);
}

TEST(ReceiveTreeParts, APartThatTakesTheDataPastTheFreeSpaceIsRefused) {
  TempDir dir;
  PrepareOptions opts{"00000000000000ab", false, 0};
  opts.free_space = 1000;  // as the disk would say (transfer::DiskFaults::free_bytes)
  auto t = std::move(std::get<0>(ReceiveTree::begin_parts(dir.fd(), wire::Offer{}, opts)));
  auto files = [](char name, size_t n, uint64_t size) {
    std::vector<ManifestEntry> out;
    for (size_t i = 0; i < n; ++i) out.push_back({EntryKind::file, std::string(1, name) + std::to_string(i), size, 0644, 0, 0, ""});
    return out;
  };
  ASSERT_FALSE(t->add_part(0, shared(files('a', 4, 200))));  // 800 of 1000
  ASSERT_EQ(t->write(0, std::vector<uint8_t>(800, 0x41)), 0);
  // Empty files and holes take no room: a sparse file counts its data only.
  std::vector<ManifestEntry> sparse = files('s', 1, 1 << 20);
  sparse[0].data = std::vector<wire::DataRange>{{0, 100}};
  ASSERT_FALSE(t->add_part(4, shared(sparse)));
  const auto err = t->add_part(5, shared(files('b', 2, 60)));  // 1020: past it
  ASSERT_TRUE(err);
  EXPECT_EQ(err->reason, wire::RefuseReason::no_space);
  EXPECT_EQ(err->message.find('\n'), std::string::npos) << err->message;  // one line
  EXPECT_NE(err->message.find("not enough space in the target directory"), std::string::npos) << err->message;
  EXPECT_NE(err->message.find("in the first 7 entries"), std::string::npos) << err->message;
  EXPECT_EQ(t->total(), 800u + (1 << 20));  // the entries before it stay as they were
}

TEST(ResumeJournal, APartsTagIsNamedInTheJournalAndAnotherStartsOver) {
  TempDir dir;
  auto p = params_of(offer_of(1 << 20));
  {
    auto j = open_journal(dir.fd(), p);
    EXPECT_EQ(j->parts_tag(), p.key.tag());  // a whole offer's: its key's, format 1 as before
  }
  p.parts_tag = "0123456789abcdef";
  {
    auto j = open_journal(dir.fd(), p);
    EXPECT_EQ(j->parts_tag(), "0123456789abcdef");
    EXPECT_EQ(j->append_held({record(0, 65536)}), 0);
  }
  EXPECT_EQ(size_of(dir.path() / ResumeJournal::file_name(p.key)), ResumeJournal::kHeaderSize + 8 + ResumeJournal::kRecordSize);
  auto any = p;
  any.parts_tag.clear();  // a later run prepared whole: takes the tag the journal names
  {
    auto j = open_journal(dir.fd(), any);
    EXPECT_EQ(j->parts_tag(), "0123456789abcdef");
    EXPECT_EQ(j->loaded().bytes(), 65536u);
  }
  auto other = p;
  other.parts_tag = "fedcba9876543210";  // another run's files: its claims are not these
  auto j = open_journal(dir.fd(), other);
  EXPECT_EQ(j->parts_tag(), "fedcba9876543210");
  EXPECT_TRUE(j->loaded().empty());
}

// The origin (format 3): who sent a transfer and how its offer begins, read
// without a lock so that a receiver asked to answer a new offer part by part
// passes over journals that cannot be this transfer's.
TEST(ResumeJournal, AnOriginIsRecordedReadWithoutALockAndKeptWithItsClaims) {
  TempDir dir;
  const wire::Offer o = offer_of(1 << 20);
  auto p = params_of(o);
  p.origin = ResumeJournal::origin_of(o, o.entries, identity(7));
  ASSERT_EQ(p.origin.size(), 16u);
  const std::string name = ResumeJournal::file_name(p.key);
  EXPECT_TRUE(ResumeJournal::is_journal_name(name));
  EXPECT_FALSE(ResumeJournal::is_journal_name(".braid-part-0123"));
  {
    auto j = open_journal(dir.fd(), p);
    EXPECT_EQ(j->append_held({record(0, 65536)}), 0);
    // Read while the session holds it locked.
    EXPECT_EQ(ResumeJournal::read_origin(dir.fd(), name), p.origin);
  }
  EXPECT_EQ(size_of(dir.path() / name), ResumeJournal::kHeaderSize + 16 + ResumeJournal::kRecordSize);
  {
    auto j = open_journal(dir.fd(), p);
    EXPECT_EQ(j->loaded().bytes(), 65536u);
    EXPECT_EQ(j->parts_tag(), p.key.tag());
  }
  // With a parts tag of its own as well, and opened by a run that knows no origin.
  p.parts_tag = "0123456789abcdef";
  {
    auto j = open_journal(dir.fd(), p);
    EXPECT_EQ(j->append_held({record(65536, 65536)}), 0);
  }
  auto any = p;
  any.parts_tag.clear();
  any.origin.clear();
  {
    auto j = open_journal(dir.fd(), any);
    EXPECT_EQ(j->parts_tag(), "0123456789abcdef");
    EXPECT_EQ(j->loaded().bytes(), 65536u);
  }
  EXPECT_EQ(ResumeJournal::read_origin(dir.fd(), name), p.origin);
  // A format-2 journal (no origin) opened for another parts tag starts over
  // with this run's tag and its origin.
  auto two = params_of(offer_of(3 << 20));
  two.parts_tag = "00112233445566aa";
  { auto j = open_journal(dir.fd(), two); }
  EXPECT_EQ(ResumeJournal::read_origin(dir.fd(), ResumeJournal::file_name(two.key)), std::nullopt);
  auto again = two;
  again.parts_tag = "00112233445566bb";
  again.origin = "0123456789abcdef";
  { auto j = open_journal(dir.fd(), again); }
  EXPECT_EQ(ResumeJournal::read_origin(dir.fd(), ResumeJournal::file_name(two.key)), again.origin);
  // An older format records none, and a damaged header reads as none: either may be any transfer's.
  auto old = params_of(offer_of(2 << 20));
  { auto j = open_journal(dir.fd(), old); }
  EXPECT_EQ(ResumeJournal::read_origin(dir.fd(), ResumeJournal::file_name(old.key)), std::nullopt);
  {
    std::fstream f(dir.path() / name, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(75);
    f.put('\x5a');
  }
  EXPECT_EQ(ResumeJournal::read_origin(dir.fd(), name), std::nullopt);
  EXPECT_EQ(ResumeJournal::read_origin(dir.fd(), ".braid-resume-missing"), std::nullopt);
}

TEST(ResumeJournal, TheOriginNamesTheSenderAndHowTheOfferBegins) {
  const wire::Offer o = offer_of(1 << 20);
  const std::string mine = ResumeJournal::origin_of(o, o.entries, identity(7));
  // The same tree's head (its first part) and its whole offer: one origin.
  wire::Offer whole = o;
  whole.entries.push_back({EntryKind::file, "later.bin", 100, 0644, 1600000000, 5, ""});
  whole.transfer_id = 9;
  EXPECT_EQ(ResumeJournal::origin_of(whole, whole.entries, identity(7)), mine);
  wire::Offer head = o;  // as PrepareOfferPart carries it: the fields, the entries apart
  head.entries.clear();
  EXPECT_EQ(ResumeJournal::origin_of(head, o.entries, identity(7)), mine);
  // Another sender, another first entry, another chunk size or hash: another origin.
  EXPECT_NE(ResumeJournal::origin_of(o, o.entries, identity(8)), mine);
  wire::Offer renamed = o;
  renamed.entries[0].path = "other.bin";
  EXPECT_NE(ResumeJournal::origin_of(renamed, renamed.entries, identity(7)), mine);
  wire::Offer grown = o;
  grown.entries[0].size += 1;
  EXPECT_NE(ResumeJournal::origin_of(grown, grown.entries, identity(7)), mine);
  wire::Offer chunked = o;
  chunked.chunk_size *= 2;
  EXPECT_NE(ResumeJournal::origin_of(chunked, chunked.entries, identity(7)), mine);
  wire::Offer sha = o;
  sha.hash = wire::HashAlgo::sha256;
  EXPECT_NE(ResumeJournal::origin_of(sha, sha.entries, identity(7)), mine);
  // The first entry's mtime: another tree under the same name.
  wire::Offer touched = o;
  touched.entries[0].mtime_nsec += 1;
  EXPECT_NE(ResumeJournal::origin_of(touched, touched.entries, identity(7)), mine);
  // As the first format-3 journals recorded it, without the mtime: the same
  // for both trees, and unlike either's origin now.
  const std::string before = ResumeJournal::origin_of(o, o.entries, identity(7), false);
  EXPECT_EQ(ResumeJournal::origin_of(touched, touched.entries, identity(7), false), before);
  EXPECT_NE(before, mine);
}

TEST(ResumeRecorder, WithoutAJournalYetPiecesWaitForIt) {
  TempDir dir;
  const wire::Offer o = offer_of(1 << 20);
  auto t = std::move(std::get<0>(ReceiveTree::prepare(dir.fd(), o, PrepareOptions{"00000000000000ab", false, 0})));
  for (uint64_t at = 0; at < 4 * 65536; at += 65536) ASSERT_EQ(t->write(at, std::vector<uint8_t>(65536, 1)), 0);
  auto p = params_of(o);
  ResumeRecorder rec(*t, RecorderOptions{std::chrono::milliseconds(10), 1});
  for (uint64_t at = 0; at < 4 * 65536; at += 65536) rec.verified(record(at, 65536));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // commits come and find no journal
  EXPECT_EQ(rec.claimed_bytes(), 0u);
  rec.attach(open_journal(dir.fd(), p));
  // A late journal finds nearly every piece waiting (issue 18): all are
  // committed at once.
  rec.commit();
  EXPECT_EQ(rec.claimed_bytes(), 4u * 65536);
  rec.stop();
  auto j = open_journal(dir.fd(), p);
  EXPECT_EQ(j->loaded().bytes(), 4u * 65536);
}

// ---- the read-back of held ranges ------------------------------------------------------

// The record a piece of `bytes` at `offset` would have had when it was verified.
PieceRecord hashed(uint64_t offset, std::span<const uint8_t> bytes) {
  PieceHasher h(wire::HashAlgo::xxh3_128);
  h.update(bytes);
  return PieceRecord{offset, bytes.size(), h.finish()};
}

TEST(VerifyHeld, OnlyRangesWhoseBytesOnDiskMatchTheirHashCount) {
  TempDir dir;
  Prepared p = prepare(dir);
  std::vector<uint8_t> data(1 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + (i >> 9));
  ASSERT_EQ(p.tree->write(0, data), 0);
  HeldRanges claimed;
  for (uint64_t at = 0; at < data.size(); at += 65536)
    claimed.add(hashed(at, std::span<const uint8_t>(data).subspan(at, 65536)));
  // A claim whose bytes never reached the disk (the journal ahead of the file).
  std::vector<uint8_t> other(65536, 0x77);
  claimed.add(hashed(5 * 65536, other));
  // 20 bytes changed behind the receiver's back in the range at 10 × 64 KiB.
  const std::vector<uint8_t> twenty(20, 0xEE);
  ASSERT_EQ(p.tree->write(10 * 65536 + 100, twenty), 0);
  for (unsigned threads : {1u, 3u}) {
    HeldVerifyResult v = verify_held(*p.tree, claimed, wire::HashAlgo::xxh3_128, {threads, nullptr});
    EXPECT_FALSE(v.cancelled);
    ASSERT_EQ(v.failed.size(), 2u);
    EXPECT_EQ(v.failed[0].offset, 5u * 65536);
    EXPECT_EQ(v.failed[1].offset, 10u * 65536);
    EXPECT_EQ(v.failed_bytes, 2u * 65536);
    EXPECT_EQ(v.verified_bytes, 14u * 65536);
    EXPECT_EQ(v.verified.bytes(), 14u * 65536);
    EXPECT_FALSE(v.verified.overlaps(5 * 65536, 1));
    EXPECT_FALSE(v.verified.overlaps(10 * 65536, 1));
  }
}

TEST(VerifyHeld, ACutPartFailsWhatLayBeyondTheCut) {
  TempDir dir;
  Prepared p = prepare(dir);
  std::vector<uint8_t> data(1 << 20, 0x42);
  ASSERT_EQ(p.tree->write(0, data), 0);
  HeldRanges claimed;
  for (uint64_t at = 0; at < data.size(); at += 65536)
    claimed.add(hashed(at, std::span<const uint8_t>(data).subspan(at, 65536)));
  const auto part = dir.path() / p.tree->temp_path(0);
  p.tree.reset();
  std::filesystem::resize_file(part, 3 * 65536 + 5);  // cut
  Prepared again = prepare(dir, true);               // as the next offer reopens it
  EXPECT_EQ(again.tree->part_size_found(0), 3 * 65536 + 5);
  EXPECT_FALSE(again.tree->part_kept(0));
  HeldVerifyResult v = verify_held(*again.tree, claimed, wire::HashAlgo::xxh3_128);
  EXPECT_EQ(v.verified_bytes, 3u * 65536);
  EXPECT_EQ(v.failed_bytes, 13u * 65536);
}

TEST(VerifyHeld, ACancelledCheckTrustsNothingItDidNotFinish) {
  TempDir dir;
  Prepared p = prepare(dir);
  std::vector<uint8_t> data(1 << 20, 0x42);
  ASSERT_EQ(p.tree->write(0, data), 0);
  HeldRanges claimed;
  claimed.add(hashed(0, data));
  std::atomic<bool> cancel{true};
  HeldVerifyResult v = verify_held(*p.tree, claimed, wire::HashAlgo::xxh3_128, {2, &cancel});
  EXPECT_TRUE(v.cancelled);
  EXPECT_TRUE(v.verified.empty());
  EXPECT_TRUE(v.failed.empty());  // not checked is not failed: the journal keeps its claim
}

}  // namespace
}  // namespace braid::files
