// The lane messages: every message survives encode/decode unchanged, and a
// truncated, padded or inconsistent payload is refused (it comes from the peer).
#include "core/wire/entry_parts.hpp"
#include "core/wire/messages.hpp"

#include <gtest/gtest.h>

#include <array>

namespace braid::wire {
namespace {

/// Bytes of an offer's entry details section (after its flags byte).
size_t offer_details_size(const Offer& o) {
  size_t n = 4;
  for (const auto& e : o.entries) {
    if (e.data) n += 4 + 1 + 4 + 16 * e.data->size();
    if (e.hard_link_to) n += 4 + 1 + 4;
    for (const auto* who : {&e.owner, &e.group})
      if (*who) n += 4 + 1 + 4 + 4 + (*who)->name.size();
    if (e.xattrs) {
      n += 4 + 1 + 1 + 4;
      for (const auto& a : e.xattrs->items) n += 8 + a.name.size() + a.value.size();
    }
  }
  return n;
}

template <class M>
M round_trip(const M& m) {
  std::vector<uint8_t> bytes;
  encode(m, bytes);
  M back{};
  EXPECT_TRUE(decode(bytes, back));
  // Every strict prefix is malformed, and so is one extra byte.
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    M partial{};
    if constexpr (std::is_same_v<M, Offer>) {
      // Without its entry details (protocol 4) or also without its flags
      // byte (protocol 3): an older sender's offer, told apart.
      const size_t details = offer_details_size(m);
      if (cut + details == bytes.size() || cut + details + 1 == bytes.size()) {
        EXPECT_TRUE(decode(std::span<const uint8_t>(bytes.data(), cut), partial));
        EXPECT_EQ(partial.version, cut + details == bytes.size() ? 4u : 3u);
        continue;
      }
    }
    if constexpr (std::is_same_v<M, Bye>) {
      if (cut == 0) {  // no payload: protocol 7's bye, "now"
        EXPECT_TRUE(decode(std::span<const uint8_t>(bytes.data(), cut), partial));
        EXPECT_FALSE(partial.after_transfer.has_value());
        continue;
      }
    }
    EXPECT_FALSE(decode(std::span<const uint8_t>(bytes.data(), cut), partial)) << "prefix of " << cut << " bytes";
  }
  bytes.push_back(0);
  M padded{};
  EXPECT_FALSE(decode(bytes, padded));
  return back;
}

Digest digest(uint8_t size, uint8_t fill) {
  Digest d;
  d.size = size;
  for (size_t i = 0; i < size; ++i) d.bytes[i] = static_cast<uint8_t>(fill + i);
  return d;
}

TEST(WireMessages, OfferKeepsNamesByteForByte) {
  Offer o;
  o.transfer_id = 7;
  o.hash = HashAlgo::sha256;
  o.chunk_size = 1 << 20;
  o.entries.push_back({EntryKind::directory, "dir with space", 0, 0755, 1700000000, 5, ""});
  o.entries.push_back({EntryKind::file, std::string("dir with space/new\nline\xff\xfe"), 12345, 0600, -3, 999999999, ""});
  o.entries.push_back({EntryKind::file, "dir with space/ünïcødé", 0, 0644, 1, 0, ""});
  o.entries.push_back({EntryKind::symlink, "dir with space/link", 0, 0777, 2, 0, "../../somewhere\x80"});
  Offer back = round_trip(o);
  EXPECT_EQ(back.transfer_id, 7u);
  EXPECT_EQ(back.hash, HashAlgo::sha256);
  EXPECT_EQ(back.chunk_size, 1u << 20);
  EXPECT_EQ(back.entries, o.entries);
  EXPECT_EQ(back.total_bytes(), 12345u);
}

TEST(WireMessages, AnOfferEncodedInPiecesIsTheSameAsInOne) {
  Offer o;
  o.transfer_id = 3;
  o.hash = HashAlgo::sha256;
  o.chunk_size = 1 << 20;
  o.sync.backup_dir = "old";
  o.early_answers = true;
  o.continued = true;
  for (int i = 0; i < 5000; ++i) {
    ManifestEntry e{EntryKind::file, "some/dir/file-" + std::to_string(i), uint64_t(i), 0644, i, 0, ""};
    if (i % 13 == 0) e.xattrs = wire::XattrList{true, false, {{"user.note", std::string(100, 'x')}}};
    o.entries.push_back(e);
  }
  std::vector<uint8_t> whole;
  encode(o, whole);
  std::vector<uint8_t> joined;
  size_t pieces = 0, largest = 0;
  encode_streamed(o, [&](std::span<const uint8_t> piece) {
    ++pieces;
    largest = std::max(largest, piece.size());
    joined.insert(joined.end(), piece.begin(), piece.end());
  });
  EXPECT_EQ(joined, whole);
  EXPECT_GT(pieces, 2u);               // handed on as it is made...
  EXPECT_LT(largest, whole.size() / 2);  // ...never the whole encoding at once
  // Fields from one offer, entries from elsewhere: as if they were its own.
  Offer fields = o;
  fields.entries.clear();
  joined.clear();
  encode_streamed(fields, o.entries, [&](std::span<const uint8_t> piece) { joined.insert(joined.end(), piece.begin(), piece.end()); });
  EXPECT_EQ(joined, whole);
  // An offer without entries: one piece, the same bytes.
  whole.clear();
  joined.clear();
  encode(fields, whole);
  encode_streamed(fields, [&](std::span<const uint8_t> piece) { joined.insert(joined.end(), piece.begin(), piece.end()); });
  EXPECT_EQ(joined, whole);
}

// offer_fields keeps every field the wire carries (a field added to Offer
// and forgotten there would change transfer keys and receivers' offers).
TEST(WireMessages, AnOffersFieldsAreTheOfferWithoutItsEntries) {
  Offer o;
  o.transfer_id = 9;
  o.hash = HashAlgo::sha256;
  o.chunk_size = 4 << 20;
  o.discard = true;
  o.sync.sync = o.sync.checksum = o.sync.update = o.sync.ignore_existing = o.sync.delete_extraneous = true;
  o.sync.dry_run = true;
  o.sync.backup_suffix = "~";
  o.sync.backup_dir = "old";
  o.continued = true;
  o.early_answers = true;
  o.entries.push_back(ManifestEntry{EntryKind::file, "a", 5, 0644, 1, 0, ""});
  const Offer fields = offer_fields(o);
  EXPECT_TRUE(fields.entries.empty());
  Offer again = fields;
  again.entries = o.entries;
  std::vector<uint8_t> a, b;
  encode(o, a);
  encode(again, b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(fields.version, o.version);
}

TEST(WireMessages, AnOffersEntriesGrowByAQuarterAsItsPartsAreAppended) {
  std::vector<int> v;
  reserve_to_append(v, 10);
  EXPECT_EQ(v.capacity(), 10u);  // at least what is asked
  v.resize(10);
  reserve_to_append(v, 0);
  EXPECT_EQ(v.capacity(), 10u);  // room enough: unchanged
  v.resize(1000);
  v.shrink_to_fit();
  reserve_to_append(v, 1);
  EXPECT_EQ(v.capacity(), 1250u);  // a quarter more, not twice
  reserve_to_append(v, 300);
  EXPECT_EQ(v.capacity(), 1300u);

  // The receiver's whole offer, put together from its parts, never holds
  // room for more than a quarter beyond what it held before the last part.
  Offer o;
  o.transfer_id = 4;
  o.continued = true;
  constexpr uint32_t kParts = 40, kPerPart = 100;
  for (uint32_t k = 0; k < kParts; ++k) {
    OfferPart p;
    p.transfer_id = 4;
    p.first_entry = k * kPerPart;
    p.last = k + 1 == kParts;
    for (uint32_t i = 0; i < kPerPart; ++i)
      p.entries.push_back({EntryKind::file, "f" + std::to_string(k * kPerPart + i), 1, 0644, 0, 0, ""});
    const size_t before = o.entries.size();
    bool complete = false;
    ASSERT_EQ(append_offer_part(o, p, complete), "");
    EXPECT_EQ(complete, p.last);
    EXPECT_LE(o.entries.capacity(), std::max(o.entries.size(), before * 5 / 4)) << "after part " << k;
  }
  EXPECT_EQ(o.entries.size(), size_t{kParts} * kPerPart);
}

// A receiver that answers part by part keeps the entries as the parts they
// came in (one copy, shared with its engine): the same checks, the same
// entries and the same encoding as the offer put together in one vector.
TEST(WireMessages, AnOffersPartsKeptApartAreTheOfferPutTogether) {
  Offer whole;
  whole.transfer_id = 4;
  whole.continued = true;
  whole.entries.push_back({EntryKind::directory, "d", 0, 0755, 0, 0, ""});
  whole.entries.push_back({EntryKind::file, "d/a", 7, 0644, 0, 0, ""});
  Offer head = whole;  // the fields; the head's own entries are the first part
  EntryParts parts;
  parts.append(std::make_shared<const std::vector<ManifestEntry>>(head.entries));
  head.entries.clear();
  auto part = [](uint32_t first, bool last, std::vector<ManifestEntry> es) {
    OfferPart p;
    p.transfer_id = 4;
    p.first_entry = first;
    p.last = last;
    p.entries = std::move(es);
    return p;
  };
  ManifestEntry link{EntryKind::file, "d/b", 0, 0644, 0, 0, ""};
  link.hard_link_to = 1;  // d/a, of the part before
  ManifestEntry bad_link = link;
  bad_link.path = "d/c";
  bad_link.hard_link_to = 0;  // a directory
  const OfferPart second = part(2, false, {link, {EntryKind::file, "d/e", 5, 0644, 0, 0, ""}});
  const OfferPart third = part(4, true, {{EntryKind::file, "f", 11, 0644, 0, 0, ""}});
  bool complete = false;
  for (const auto& [p, want] : std::vector<std::pair<OfferPart, std::string>>{
           {part(3, false, {link}), "an offer part for entries 3… where entry 2 comes next"},
           {part(2, false, {bad_link}), "an offer part links a file to an entry that is no file"},
           {second, ""},
           {second, ""},  // sent again: already here
           {third, ""},
           {part(5, false, {link}), "an offer part after the offer's last one"}}) {
    bool c1 = false, c2 = false;
    const std::string one = append_offer_part(whole, p, c1);  // the vector way, beside it
    const std::string two = append_offer_part(head, parts, p, c2);
    EXPECT_EQ(one, want);
    EXPECT_EQ(two, want);
    EXPECT_EQ(c1, c2);
    complete = complete || c2;
  }
  EXPECT_TRUE(complete);
  EXPECT_FALSE(head.continued);
  ASSERT_EQ(parts.size(), whole.entries.size());
  EXPECT_EQ(parts.parts().size(), 3u);  // the head's, the second, the third: no copy of one into another
  EXPECT_EQ(parts.first_of(2), 4u);
  EXPECT_EQ(parts.total_bytes(), whole.total_bytes());
  EXPECT_EQ(std::vector<ManifestEntry>(parts.begin(), parts.end()), whole.entries);
  for (size_t i = 0; i < parts.size(); ++i) EXPECT_EQ(parts[i], whole.entries[i]) << i;
  std::vector<uint8_t> joined, put_together;
  encode(whole, put_together);
  encode_streamed(head, parts, [&](std::span<const uint8_t> piece) { joined.insert(joined.end(), piece.begin(), piece.end()); });
  EXPECT_EQ(joined, put_together);
}

TEST(WireMessages, OfferRefusesImpossibleEntries) {
  Offer o;
  o.entries.push_back({EntryKind::directory, "d", 5, 0755, 0, 0, ""});  // a directory with a size
  std::vector<uint8_t> bytes;
  encode(o, bytes);
  Offer back;
  EXPECT_FALSE(decode(bytes, back));
  Offer big_count;
  bytes.clear();
  encode(big_count, bytes);
  bytes[13] = 0x7f;  // entry count far beyond the bytes present
  EXPECT_FALSE(decode(bytes, back));
}

// Found by fuzz/targets/offer.cpp: sizes that wrapped past 2^64 gave a tiny
// total_bytes(), so the receiver's free-space check passed and its byte
// layout described a few bytes for files claimed to be exabytes.
TEST(WireMessages, OfferRefusesSizesThatAddUpPast2To64) {
  Offer o;
  o.chunk_size = 1 << 20;
  o.entries.push_back({EntryKind::file, "a", uint64_t{1} << 63, 0644, 0, 0, ""});
  o.entries.push_back({EntryKind::file, "b", uint64_t{1} << 63, 0644, 0, 0, ""});
  std::vector<uint8_t> bytes;
  encode(o, bytes);
  Offer back;
  EXPECT_FALSE(decode(bytes, back));
  o.entries[1].size = (uint64_t{1} << 63) - 1;  // exactly 2^64 - 1 in all: still fine
  bytes.clear();
  encode(o, bytes);
  ASSERT_TRUE(decode(bytes, back));
  EXPECT_EQ(back.total_bytes(), UINT64_MAX);
}

TEST(WireMessages, AnOffersDiscardFlagRoundTripsAndUnknownFlagsAreRefused) {
  Offer o;
  o.transfer_id = 7;
  o.chunk_size = 1 << 18;
  o.entries = {ManifestEntry{EntryKind::file, "probe", 1 << 30, 0600, 0, 0, {}}};
  o.discard = true;
  std::vector<uint8_t> bytes;
  encode(o, bytes);
  Offer back;
  ASSERT_TRUE(decode(bytes, back));
  EXPECT_TRUE(back.discard);
  const size_t flags = bytes.size() - 5;  // the flags byte, then no entry details (u32 0)
  bytes[flags] = 0;
  ASSERT_TRUE(decode(bytes, back));
  EXPECT_FALSE(back.discard);
  bytes[flags] = 0x80;  // protocol 6: the offer goes on in offer_part frames
  ASSERT_TRUE(decode(bytes, back));
  EXPECT_TRUE(back.continued);
  bytes.resize(flags);  // an offer of version 3 (no flags) is told apart, for a refusal it understands
  ASSERT_TRUE(decode(bytes, back));
  EXPECT_EQ(back.version, 3u);
}

TEST(WireMessages, SmallMessagesRoundTrip) {
  Cancel c = round_trip(Cancel{12, "probe phase over"});
  EXPECT_EQ(c.transfer_id, 12u);
  EXPECT_EQ(c.reason, "probe phase over");
  EXPECT_EQ(round_trip(LaneJoin{kProtocolVersion, 9}).lane_id, 9u);
  EXPECT_EQ(round_trip(LaneWelcome{4}).lane_id, 4u);
  EXPECT_EQ(round_trip(Addresses{{"127.0.0.1:7878", "[::1]:7878"}}).endpoints.size(), 2u);
  EXPECT_EQ(round_trip(Accept{3, {}}).transfer_id, 3u);
  Refuse r = round_trip(Refuse{3, RefuseReason::no_space, "disk full"});
  EXPECT_EQ(r.reason, RefuseReason::no_space);
  EXPECT_EQ(r.message, "disk full");
  EXPECT_EQ(round_trip(PieceAbort{1, 2}).piece, 2u);
  Ack a = round_trip(Ack{1, 77, 123456789, AckStatus::ok});
  EXPECT_EQ(a.piece, 77u);
  EXPECT_EQ(a.recv_duration_ns, 123456789u);
  EXPECT_EQ(round_trip(LaneClosed{2, "forged frame"}).reason, "forged frame");
  Done d = round_trip(Done{5, digest(16, 1)});
  EXPECT_EQ(d.root, digest(16, 1));
  TransferResult res = round_trip(TransferResult{5, ResultStatus::root_mismatch, "bad"});
  EXPECT_EQ(res.status, ResultStatus::root_mismatch);
  EXPECT_EQ(round_trip(ErrorMessage{3, "x"}).message, "x");
}

// Protocol 8's goodbye with done carries its transfer; protocol 7's bye is
// empty and still reads as "now", and a protocol-7 decoder (empty payload
// only) refuses the new one — which its receiver then ignores.
TEST(WireMessages, AByeMayNameTheTransferItFollows) {
  EXPECT_FALSE(round_trip(Bye{}).after_transfer.has_value());
  EXPECT_TRUE(encode_message(Bye{}).empty());
  EXPECT_EQ(round_trip(Bye{7}).after_transfer, std::optional<uint32_t>(7));
  EXPECT_EQ(encode_message(Bye{7}).size(), 4u);
  Bye b;
  const std::vector<uint8_t> three{0, 0, 1};
  EXPECT_FALSE(decode(three, b));
}

TEST(WireMessages, AcceptCarriesTheRangesTheReceiverHolds) {
  Accept a{9, {HeldRange{0, 1 << 20, digest(16, 3)}, HeldRange{5u << 20, 4096, digest(32, 8)}}};
  Accept back = round_trip(a);
  EXPECT_EQ(back.transfer_id, 9u);
  EXPECT_EQ(back.held, a.held);
  EXPECT_TRUE(round_trip(Accept{4, {}}).held.empty());
  EXPECT_EQ(round_trip(Refuse{3, RefuseReason::busy, "in use"}).reason, RefuseReason::busy);
  EXPECT_STREQ(refuse_reason_name(RefuseReason::busy), "busy");
}

TEST(WireMessages, AcceptRefusesImpossibleRanges) {
  auto refused = [](const HeldRange& h) {
    std::vector<uint8_t> bytes;
    encode(Accept{1, {h}}, bytes);
    Accept back;
    return !decode(bytes, back);
  };
  EXPECT_TRUE(refused(HeldRange{0, 0, digest(16, 1)}));               // empty
  EXPECT_TRUE(refused(HeldRange{UINT64_MAX - 1, 2, digest(16, 1)}));  // end overflows
  EXPECT_TRUE(refused(HeldRange{0, 10, digest(20, 1)}));              // no such digest size
  EXPECT_FALSE(refused(HeldRange{UINT64_MAX - 2, 2, digest(16, 1)}));
  // A count far beyond the bytes present.
  std::vector<uint8_t> bytes;
  encode(Accept{1, {}}, bytes);
  bytes[4] = 0x00;
  bytes[5] = 0x03;  // 0x00030000 ranges, none present
  Accept back;
  EXPECT_FALSE(decode(bytes, back));
}

TEST(WireMessages, OfferCarriesSyncOptionsAndTellsAnOlderSenderApart) {
  Offer o;
  o.transfer_id = 2;
  o.chunk_size = 1 << 20;
  o.entries.push_back({EntryKind::file, "f", 10, 0644, 1, 0, ""});
  for (int bit = 0; bit < 6; ++bit) {
    o.sync = {};
    bool* flags[] = {&o.sync.sync, &o.sync.checksum, &o.sync.update, &o.sync.ignore_existing,
                     &o.sync.delete_extraneous, &o.sync.dry_run};
    *flags[bit] = true;
    Offer back = round_trip(o);
    EXPECT_EQ(back.sync, o.sync) << "bit " << bit;
    EXPECT_EQ(back.version, kProtocolVersion);
  }
  std::vector<uint8_t> bytes;
  encode(o, bytes);
  // Every bit of the flags byte has its meaning now (bit 7, protocol 6: the
  // offer is continued); a continued offer from a protocol 4 sender (no
  // entry details) cannot be, and is refused.
  bytes[bytes.size() - 5] = 0x80;
  bytes.resize(bytes.size() - 4);
  Offer back;
  EXPECT_FALSE(decode(bytes, back));
}

TEST(WireMessages, OfferCarriesSparseFilesDataRanges) {
  Offer o;
  o.transfer_id = 2;
  o.chunk_size = 1 << 20;
  o.entries.push_back({EntryKind::directory, "d", 0, 0755, 1, 0, ""});
  o.entries.push_back({EntryKind::file, "d/sparse", 1ull << 40, 0644, 1, 0, ""});
  o.entries.back().data = std::vector<DataRange>{{0, 4096}, {1ull << 30, 1 << 20}, {(1ull << 40) - 8192, 8192}};
  o.entries.push_back({EntryKind::file, "d/dense", 10, 0644, 1, 0, ""});
  o.entries.push_back({EntryKind::file, "d/all-hole", 1 << 20, 0644, 1, 0, ""});
  o.entries.back().data = std::vector<DataRange>{};
  Offer back = round_trip(o);
  EXPECT_EQ(back.entries, o.entries);
  EXPECT_EQ(back.version, kProtocolVersion);
  EXPECT_EQ(back.total_bytes(), (1ull << 40) + 10 + (1 << 20));
  EXPECT_EQ(back.data_bytes(), 4096u + (1 << 20) + 8192 + 10);
}

TEST(WireMessages, OfferRefusesImpossibleDataRanges) {
  auto refused = [](EntryKind kind, uint64_t size, std::vector<DataRange> data) {
    Offer o;
    o.chunk_size = 1 << 20;
    o.entries.push_back({kind, "x", kind == EntryKind::file ? size : 0, 0644, 1, 0, ""});
    o.entries.back().data = std::move(data);
    std::vector<uint8_t> bytes;
    encode(o, bytes);
    Offer back;
    return !decode(bytes, back);
  };
  EXPECT_FALSE(refused(EntryKind::file, 100, {{0, 10}, {20, 80}}));
  EXPECT_TRUE(refused(EntryKind::file, 100, {{0, 0}}));             // empty
  EXPECT_TRUE(refused(EntryKind::file, 100, {{90, 11}}));           // past the end
  EXPECT_TRUE(refused(EntryKind::file, 100, {{20, 10}, {0, 10}}));  // out of order
  EXPECT_TRUE(refused(EntryKind::file, 100, {{0, 10}, {10, 10}}));  // touching: one range
  EXPECT_TRUE(refused(EntryKind::file, 100, {{0, 10}, {5, 10}}));   // overlapping
  EXPECT_TRUE(refused(EntryKind::file, UINT64_MAX, {{UINT64_MAX - 1, 2}}));  // end overflows
  EXPECT_TRUE(refused(EntryKind::directory, 0, {}));                // only files have holes
  std::vector<DataRange> many;
  for (uint64_t i = 0; i <= kMaxDataRanges; ++i) many.push_back({2 * i, 1});
  EXPECT_TRUE(refused(EntryKind::file, 2 * kMaxDataRanges + 2, many));  // more than the bound
  many.pop_back();
  EXPECT_FALSE(refused(EntryKind::file, 2 * kMaxDataRanges + 2, many));

  // Details out of order, an unknown kind, a count beyond the bytes present.
  Offer o;
  o.chunk_size = 1 << 20;
  o.entries.push_back({EntryKind::file, "a", 100, 0644, 1, 0, ""});
  o.entries.push_back({EntryKind::file, "b", 100, 0644, 1, 0, ""});
  o.entries[0].data = o.entries[1].data = std::vector<DataRange>{{0, 10}};
  std::vector<uint8_t> bytes;
  encode(o, bytes);
  Offer back;
  ASSERT_TRUE(decode(bytes, back));
  const size_t first = bytes.size() - 2 * 25;  // two records of 4 + 1 + 4 + 16 bytes
  auto twisted = bytes;
  twisted[first + 3] = 1;  // both records name entry 1
  EXPECT_FALSE(decode(twisted, back));
  twisted = bytes;
  twisted[first + 4] = 9;  // a kind no version defines
  EXPECT_FALSE(decode(twisted, back));
  twisted = bytes;
  twisted[first - 2] = 0x7f;  // 0x7f02 records
  EXPECT_FALSE(decode(twisted, back));
}

TEST(WireMessages, AcceptCarriesSyncVerdictsAndWhatDeleteRemoves) {
  Accept a{5, {HeldRange{0, 4096, digest(16, 1)}},
           {{0, FileVerdict::unchanged}, {3, FileVerdict::older_here}, {9, FileVerdict::exists_here}},
           7,
           {"d/old", std::string("d/new\nline")}};
  Accept back = round_trip(a);
  EXPECT_EQ(back.held, a.held);
  EXPECT_EQ(back.files, a.files);
  EXPECT_EQ(back.extraneous_count, 7u);
  EXPECT_EQ(back.extraneous, a.extraneous);
  auto refused = [](const Accept& x) {
    std::vector<uint8_t> bytes;
    encode(x, bytes);
    Accept out;
    return !decode(bytes, out);
  };
  EXPECT_TRUE(refused(Accept{1, {}, {{3, FileVerdict::unchanged}, {3, FileVerdict::unchanged}}, 0, {}}));  // twice
  EXPECT_TRUE(refused(Accept{1, {}, {{4, FileVerdict::unchanged}, {2, FileVerdict::unchanged}}, 0, {}}));  // order
  EXPECT_TRUE(refused(Accept{1, {}, {{0, static_cast<FileVerdict>(5)}}, 0, {}}));
  EXPECT_TRUE(refused(Accept{1, {}, {}, 1, {"a", "b"}}));  // more listed than counted
  EXPECT_FALSE(refused(Accept{1, {}, {}, 100000, {"a", "b"}}));
}

TEST(WireMessages, UdpLaneMessagesRoundTrip) {
  EXPECT_EQ(round_trip(UdpOpen{3, "[::1]:0"}).address, "[::1]:0");
  UdpReady ready = round_trip(UdpReady{3, "127.0.0.1:40000", ""});
  EXPECT_EQ(ready.lane_id, 3u);
  EXPECT_EQ(ready.address, "127.0.0.1:40000");
  EXPECT_EQ(round_trip(UdpReady{4, "", "bind failed"}).error, "bind failed");
  UdpPiece p = round_trip(UdpPiece{2, 1, 17, 16, 1u << 24, 1u << 20, digest(32, 7)});
  EXPECT_EQ(p.piece, 17u);
  EXPECT_EQ(p.piece_offset, 1u << 24);
  EXPECT_EQ(p.hash, digest(32, 7));
  LaneAck la = round_trip(LaneAck{5, Ack{1, 9, 42, AckStatus::hash_mismatch}});
  EXPECT_EQ(la.lane_id, 5u);
  EXPECT_EQ(la.ack.piece, 9u);
  EXPECT_EQ(la.ack.status, AckStatus::hash_mismatch);
  // A piece whose end overflows the byte space is refused.
  std::vector<uint8_t> bytes;
  encode(UdpPiece{2, 1, 1, 0, UINT64_MAX, 2, digest(16, 1)}, bytes);
  UdpPiece back;
  EXPECT_FALSE(decode(bytes, back));
}

TEST(WireMessages, UnknownEnumValuesAreRefused) {
  std::vector<uint8_t> bytes;
  encode(Ack{1, 2, 3, AckStatus::ok}, bytes);
  bytes.back() = 9;
  Ack a;
  EXPECT_FALSE(decode(bytes, a));
  bytes.clear();
  encode(Done{1, digest(16, 0)}, bytes);
  bytes[4] = 20;  // a digest of 20 bytes does not exist
  Done d;
  EXPECT_FALSE(decode(bytes, d));
}

std::vector<uint8_t> piece_payload(const PieceHeader& h, size_t data) {
  std::vector<uint8_t> p(PieceHeader::kSize + data, 0xCC);
  encode_piece_header(h, std::span<uint8_t, PieceHeader::kSize>(p.data(), PieceHeader::kSize));
  return p;
}

TEST(WireMessages, PieceHeaderRoundTrip) {
  PieceHeader h;
  h.transfer_id = 2;
  h.piece = 40;
  h.chunk = 39;
  h.flags = PieceHeader::kLast;
  h.piece_offset = 1 << 20;
  h.piece_length = 300;
  h.data_offset = (1 << 20) + 100;
  h.hash = digest(16, 9);
  auto p = piece_payload(h, 200);
  PieceHeader back;
  size_t n = 0;
  ASSERT_TRUE(decode_piece_header(p, back, n));
  EXPECT_EQ(n, 200u);
  EXPECT_EQ(back.piece, 40u);
  EXPECT_EQ(back.chunk, 39u);
  EXPECT_EQ(back.data_offset, h.data_offset);
  EXPECT_TRUE(back.last());
  EXPECT_EQ(back.hash, h.hash);
}

TEST(WireMessages, PieceHeaderMustBeSelfConsistent) {
  PieceHeader h;
  h.piece_offset = 1000;
  h.piece_length = 100;
  h.data_offset = 1000;
  PieceHeader back;
  size_t n = 0;
  EXPECT_TRUE(decode_piece_header(piece_payload(h, 100), back, n));   // a middle frame may end the piece's bytes
  EXPECT_FALSE(decode_piece_header(piece_payload(h, 101), back, n));  // data past the piece's end
  h.data_offset = 999;
  EXPECT_FALSE(decode_piece_header(piece_payload(h, 1), back, n));  // data before the piece
  h.data_offset = 1000;
  h.flags = PieceHeader::kLast;
  h.hash = digest(16, 0);
  EXPECT_FALSE(decode_piece_header(piece_payload(h, 50), back, n));  // last frame that does not reach the end
  EXPECT_TRUE(decode_piece_header(piece_payload(h, 100), back, n));
  h.hash.size = 0;
  EXPECT_FALSE(decode_piece_header(piece_payload(h, 100), back, n));  // last frame without a hash
  h.piece_offset = UINT64_MAX - 10;
  h.data_offset = h.piece_offset;
  h.hash = digest(16, 0);
  EXPECT_FALSE(decode_piece_header(piece_payload(h, 100), back, n));  // overflow
  EXPECT_FALSE(decode_piece_header(std::vector<uint8_t>(10), back, n));
}

TEST(WireMessages, OfferCarriesHardLinks) {
  Offer o;
  o.chunk_size = 1 << 20;
  o.entries.push_back({EntryKind::file, "a", 100, 0644, 1, 0, ""});
  o.entries[0].data = std::vector<DataRange>{{0, 10}};
  o.entries.push_back({EntryKind::directory, "d", 0, 0755, 1, 0, ""});
  o.entries.push_back({EntryKind::file, "d/b", 0, 0644, 1, 0, ""});
  o.entries.back().hard_link_to = 0;
  o.entries.push_back({EntryKind::file, "d/c", 0, 0644, 1, 0, ""});
  o.entries.back().hard_link_to = 0;
  Offer back = round_trip(o);
  EXPECT_EQ(back.entries, o.entries);
  EXPECT_EQ(back.total_bytes(), 100u);

  auto refused = [](const Offer& bad) {
    std::vector<uint8_t> bytes;
    encode(bad, bytes);
    Offer b;
    return !decode(bytes, b);
  };
  Offer bad = o;
  bad.entries[2].size = 5;  // a link holds no bytes of its own
  EXPECT_TRUE(refused(bad));
  bad = o;
  bad.entries[2].hard_link_to = 1;  // to a directory
  EXPECT_TRUE(refused(bad));
  bad = o;
  bad.entries[3].hard_link_to = 2;  // to another link
  EXPECT_TRUE(refused(bad));
  bad = o;
  bad.entries[0].data.reset();
  bad.entries[0].size = 0;
  bad.entries[0].hard_link_to = 3;  // to a later entry (and so, in a loop)
  EXPECT_TRUE(refused(bad));
  bad = o;
  bad.entries[2].hard_link_to = 2;  // to itself
  EXPECT_TRUE(refused(bad));
  bad = o;
  bad.entries[1].hard_link_to = 0;  // a directory is no link
  EXPECT_TRUE(refused(bad));
}

TEST(WireMessages, OfferCarriesOwnersXattrsAndAcls) {
  Offer o;
  o.chunk_size = 1 << 20;
  o.entries.push_back({EntryKind::directory, "d", 0, 0755, 1, 0, ""});
  o.entries[0].owner = OwnerId{1000, "alice"};
  o.entries[0].group = OwnerId{100, "users"};
  o.entries[0].xattrs = XattrList{true, true, {{"system.posix_acl_default", std::string("\x02\0\0\0", 4)}}};
  o.entries.push_back({EntryKind::file, "d/f", 10, 0644, 1, 0, ""});
  o.entries[1].owner = OwnerId{0, ""};  // --numeric-ids: no name
  o.entries[1].xattrs = XattrList{true, false, {{"security.x", ""}, {"user.a", std::string("v\0\xff", 3)}}};
  o.entries.push_back({EntryKind::symlink, "d/l", 0, 0777, 1, 0, "f"});
  o.entries[2].group = OwnerId{7, "g"};
  o.entries.push_back({EntryKind::file, "d/e", 0, 0644, 1, 0, ""});
  o.entries[3].xattrs = XattrList{false, true, {}};  // -A and no ACL: the receiver removes any
  Offer back = round_trip(o);
  EXPECT_EQ(back.entries, o.entries);

  auto refused = [](const Offer& bad) {
    std::vector<uint8_t> bytes;
    encode(bad, bytes);
    Offer b;
    return !decode(bytes, b);
  };
  EXPECT_FALSE(refused(o));
  Offer bad = o;
  bad.entries[1].xattrs->items = {{"user.b", "1"}, {"user.a", "2"}};  // not sorted
  EXPECT_TRUE(refused(bad));
  bad.entries[1].xattrs->items = {{"user.a", "1"}, {"user.a", "2"}};  // twice
  EXPECT_TRUE(refused(bad));
  bad.entries[1].xattrs->items = {{"system.posix_acl_access", "x"}};  // an ACL in an -X-only list
  EXPECT_TRUE(refused(bad));
  bad.entries[1].xattrs->items = {{"system.nfs4_acl", "x"}};  // neither class
  EXPECT_TRUE(refused(bad));
  bad.entries[1].xattrs->items = {{"user.", "x"}};  // a namespace without a name
  EXPECT_TRUE(refused(bad));
  bad.entries[1].xattrs->items = {{std::string("user.a\0b", 8), "x"}};
  EXPECT_TRUE(refused(bad));
  bad = o;
  bad.entries[1].xattrs = XattrList{true, true, {{"system.posix_acl_default", "x"}}};  // default ACL on a file
  EXPECT_TRUE(refused(bad));
  bad = o;
  bad.entries[2].xattrs = XattrList{true, false, {}};  // not on symlinks
  EXPECT_TRUE(refused(bad));
  bad = o;
  bad.entries[1].xattrs->with_xattrs = false;  // no class at all
  bad.entries[1].xattrs->items.clear();
  EXPECT_TRUE(refused(bad));
  bad = o;
  bad.entries.push_back({EntryKind::file, "d/h", 0, 0644, 1, 0, ""});
  bad.entries.back().hard_link_to = 1;
  EXPECT_FALSE(refused(bad));
  bad.entries.back().owner = OwnerId{1, "x"};  // a hard link has its file's owner
  EXPECT_TRUE(refused(bad));
  bad.entries.back().owner.reset();
  bad.entries.back().xattrs = XattrList{true, false, {}};
  EXPECT_TRUE(refused(bad));
}

}  // namespace
}  // namespace braid::wire
