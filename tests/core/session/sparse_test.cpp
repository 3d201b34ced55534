// Sparse files (`braid send -S`): the data ranges a sender offers
// (core/wire/data_ranges.hpp) and how both ends deliver the holes without a
// byte sent — as kept records, the way sync keeps unchanged files
// (core/session/sync.hpp).
#include <gtest/gtest.h>

#include <random>

#include "core/session/sync.hpp"
#include "core/wire/entry_parts.hpp"
#include "core/wire/data_ranges.hpp"

namespace braid::session {
namespace {

using wire::DataRange;
constexpr uint64_t MiB = 1 << 20;

wire::ManifestEntry file(const std::string& path, uint64_t size,
                         std::optional<std::vector<DataRange>> data = std::nullopt) {
  wire::ManifestEntry e;
  e.path = path;
  e.size = size;
  e.data = std::move(data);
  return e;
}

TEST(SparseRanges, WhatTheFileSystemReportsIsClippedMergedAndSorted) {
  // Out of order, touching, overlapping, past the end, empty.
  const auto r = wire::data_ranges_to_offer({{100, 50}, {0, 10}, {10, 5}, {120, 10}, {190, 50}, {60, 0}}, 200);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, (std::vector<DataRange>{{0, 15}, {100, 50}, {190, 10}}));
  EXPECT_TRUE(wire::valid_data_ranges(*r, 200));
}

TEST(SparseRanges, AFileWithoutHolesOrWithTooManyRangesIsSentAsData) {
  EXPECT_EQ(wire::data_ranges_to_offer({{0, 100}}, 100), std::nullopt);           // no hole
  EXPECT_EQ(wire::data_ranges_to_offer({{0, 60}, {60, 40}}, 100), std::nullopt);  // no hole, two reports
  EXPECT_EQ(wire::data_ranges_to_offer({{0, 10}, {20, 10}, {40, 10}}, 100, 2), std::nullopt);  // past the bound
  EXPECT_EQ(wire::data_ranges_to_offer({{0, 10}, {20, 10}}, 100, 2), (std::vector<DataRange>{{0, 10}, {20, 10}}));
  EXPECT_EQ(wire::data_ranges_to_offer({}, 100), std::vector<DataRange>{});  // all hole
  EXPECT_EQ(wire::data_ranges_to_offer({}, 0), std::nullopt);                // empty file: nothing to say
}

TEST(SparseRanges, HolesAreTheFileLessItsData) {
  EXPECT_EQ(wire::holes_of(file("a", 100, std::vector<DataRange>{{10, 10}, {50, 50}})),
            (std::vector<DataRange>{{0, 10}, {20, 30}}));
  EXPECT_EQ(wire::holes_of(file("a", 100, std::vector<DataRange>{})), (std::vector<DataRange>{{0, 100}}));
  EXPECT_TRUE(wire::holes_of(file("a", 100)).empty());  // no data ranges: all data
}

wire::Offer offer_of(std::vector<wire::ManifestEntry> entries) {
  wire::Offer o;
  o.chunk_size = MiB;
  o.entries = std::move(entries);
  return o;
}

TEST(SparseRecords, HolesAreDeliveredAsKeptRecordsCutAtChunks) {
  // a: 1 MiB dense; b: 4 MiB, data only in [1.5 MiB, 2 MiB); c: all hole, 1 MiB.
  const auto o = offer_of({file("a", MiB), file("b", 4 * MiB, std::vector<DataRange>{{MiB + MiB / 2, MiB / 2}}),
                           file("c", MiB, std::vector<DataRange>{})});
  const auto rec = sync::kept_records(o, {});
  std::vector<sync::Span> spans;
  for (const auto& r : rec) {
    EXPECT_EQ(r.hash.size, 0);
    spans.push_back({r.offset, r.length});
  }
  // b's first hole [1, 2.5) MiB cut at 2 MiB; its tail [3, 5) MiB runs into c's hole [5, 6) MiB: merged, then cut.
  EXPECT_EQ(spans, (std::vector<sync::Span>{{MiB, MiB}, {2 * MiB, MiB / 2}, {3 * MiB, MiB}, {4 * MiB, MiB},
                                            {5 * MiB, MiB}}));
  EXPECT_EQ(sync::hole_bytes(o.entries, {}), 4 * MiB + MiB / 2);
  EXPECT_EQ(o.data_bytes(), MiB + MiB / 2);
  EXPECT_EQ(sync::tally(o, {}).hole_bytes, 4 * MiB + MiB / 2);
}

TEST(SparseRecords, AKeptSparseFileIsOneRecordNotItsHolesTwice) {
  const auto o = offer_of({file("b", 2 * MiB, std::vector<DataRange>{{0, 10}})});
  const auto rec = sync::kept_records(o, {{0, wire::FileVerdict::unchanged}});
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_EQ(rec[0].offset, 0u);
  EXPECT_EQ(rec[0].length + rec[1].length, 2 * MiB);
  EXPECT_EQ(sync::hole_bytes(o.entries, {{0, wire::FileVerdict::unchanged}}), 0u);
  // An older version there: its holes are still kept records, and only its
  // data is compared chunk by chunk.
  const auto older = sync::kept_records(o, {{0, wire::FileVerdict::older_here}});
  ASSERT_EQ(older.size(), 2u);
  EXPECT_EQ(older[0].offset, 10u);
  EXPECT_EQ(sync::reusable_spans(0, 2 * MiB, 2 * MiB, MiB, o.entries[0].data), (std::vector<sync::Span>{{0, 10}}));
}

// An offer answered part by part (protocol 9): the sender takes the holes
// out of its plan chunk by chunk as the receiver accepts entries
// (holes_between over the accepted entries, from a cursor), the receiver
// as the parts come (HoleRecords: it lets go of the entries as it goes).
// Both must be exactly the records a whole offer gives, or the pieces and
// the records would not tile the transfer.
TEST(SparseRecords, HolesTakenChunkByChunkAreTheWholeOffersRecords) {
  std::mt19937_64 rng(18);
  for (int round = 0; round < 200; ++round) {
    const uint64_t chunk = uint64_t{1} << (12 + rng() % 3);  // 4, 8 or 16 KiB: many chunks
    wire::Offer o;
    o.chunk_size = chunk;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const uint64_t size = rng() % (5 * chunk);
      if (rng() % 4 == 0) {
        o.entries.push_back(file("d" + std::to_string(i), 0));
        o.entries.back().kind = wire::EntryKind::directory;
        continue;
      }
      std::vector<DataRange> data;
      for (uint64_t at = rng() % (chunk + 1); at < size; at += 1 + rng() % chunk) {
        const uint64_t len = std::min<uint64_t>(size - at, 1 + rng() % chunk);
        data.push_back({at, len});
        at += len;
      }
      o.entries.push_back(rng() % 3 ? file("f" + std::to_string(i), size, data) : file("f" + std::to_string(i), size));
    }
    const auto whole = sync::kept_records(o, {});
    // The parts as the receiver takes them, cut at random places.
    std::vector<wire::HeldRange> received;
    sync::HoleRecords holes(chunk);
    uint64_t end = 0;  // of the parts so far
    for (size_t from = 0; from < o.entries.size();) {
      const size_t to = std::min(o.entries.size(), from + 1 + rng() % 4);
      const size_t before = received.size();
      holes.add(std::span<const wire::ManifestEntry>(o.entries).subspan(from, to - from), received);
      for (size_t k = from; k < to; ++k) end += o.entries[k].kind == wire::EntryKind::file ? o.entries[k].size : 0;
      // A record comes once its entries have: it lies within the parts so far.
      for (size_t k = before; k < received.size(); ++k) ASSERT_LE(received[k].offset + received[k].length, end);
      from = to;
    }
    holes.finish(received);
    // The sender's growth: the whole chunks of the accepted entries' bytes,
    // entry by entry, with the cursor holes_between is given.
    std::vector<wire::HeldRange> grown;
    uint64_t plan = 0, accepted = 0, cursor_start = 0;
    size_t cursor = 0;
    const auto starts = sync::entry_offsets(o.entries);
    for (size_t k = 1; k <= o.entries.size(); ++k) {
      accepted += o.entries[k - 1].kind == wire::EntryKind::file ? o.entries[k - 1].size : 0;
      const uint64_t to = k == o.entries.size() ? accepted : accepted / chunk * chunk;
      if (to <= plan) continue;
      const auto span = std::span<const wire::ManifestEntry>(o.entries).first(k).subspan(cursor);
      for (const auto& r : sync::holes_between(span, cursor_start, chunk, plan, to)) grown.push_back(r);
      while (cursor < k && starts[cursor] + (o.entries[cursor].kind == wire::EntryKind::file ? o.entries[cursor].size : 0) <= to) {
        cursor_start = starts[cursor] + (o.entries[cursor].kind == wire::EntryKind::file ? o.entries[cursor].size : 0);
        ++cursor;
      }
      plan = to;
    }
    auto key = [](const std::vector<wire::HeldRange>& v) {
      std::vector<sync::Span> out;
      for (const auto& r : v) out.push_back({r.offset, r.length});
      return out;
    };
    // And what the first braid to answer part by part recorded (a peer of
    // an older build computes the same records): every hole, runs merged,
    // cut at each chunk boundary at the end.
    std::vector<sync::Span> reference, runs;
    for (uint64_t at = 0; const auto& e : o.entries) {
      if (e.kind != wire::EntryKind::file) continue;
      for (const auto& h : wire::holes_of(e)) {
        if (!runs.empty() && runs.back().offset + runs.back().length == at + h.offset) runs.back().length += h.length;
        else runs.push_back({at + h.offset, h.length});
      }
      at += e.size;
    }
    for (auto r : runs)
      while (r.length > 0) {
        const uint64_t n = std::min(chunk - r.offset % chunk, r.length);
        reference.push_back({r.offset, n});
        r.offset += n;
        r.length -= n;
      }
    ASSERT_EQ(key(whole), reference) << "round " << round;
    ASSERT_EQ(key(received), key(whole)) << "round " << round;
    ASSERT_EQ(key(grown), key(whole)) << "round " << round;
    EXPECT_EQ(holes.bytes(), sync::hole_bytes(o.entries, {}));
  }
}

// The receiver's verified prefix waits for hole records: a hole at a file's
// end must not wait for the offer's end when plain files follow (nothing
// after it could have made it longer).
TEST(SparseRecords, AHoleAtAFilesEndIsRecordedOnceAFileBeginningWithDataFollows) {
  const uint64_t chunk = 1 << 16;
  sync::HoleRecords holes(chunk);
  std::vector<wire::HeldRange> out;
  const std::vector<wire::ManifestEntry> sparse{file("s", 3 * chunk, std::vector<DataRange>{{0, 100}})};
  holes.add(sparse, out);
  // [100, 3 chunks): its pieces up to a chunk boundary are final whatever
  // follows (a run that grows is cut there all the same).
  EXPECT_EQ(out.size(), 3u);
  const std::vector<wire::ManifestEntry> empty_then_hole{file("e", 0), file("h", chunk, std::vector<DataRange>{{chunk - 1, 1}})};
  holes.add(empty_then_hole, out);
  // h begins with a hole, which the run takes on across the empty file:
  // [3 chunks, 4 chunks - 1) waits, for the next file might begin with one too.
  EXPECT_EQ(out.size(), 3u);
  const std::vector<wire::ManifestEntry> plain{file("p", 10)};
  holes.add(plain, out);
  ASSERT_EQ(out.size(), 4u);  // it begins with data: [100, 4 chunks - 1) in four, cut at chunk boundaries
  EXPECT_EQ(out.front().offset, 100u);
  EXPECT_EQ(out.back().offset + out.back().length, 4 * chunk - 1);
  holes.finish(out);
  EXPECT_EQ(out.size(), 4u);
  wire::Offer whole;
  whole.chunk_size = chunk;
  whole.entries = {sparse[0], empty_then_hole[0], empty_then_hole[1], plain[0]};
  EXPECT_EQ(out, sync::kept_records(whole, {}));
}

}  // namespace
}  // namespace braid::session
