// The transfer's byte space over files, piece and root hashes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/files/file_layout.hpp"
#include "engine/files/piece_hasher.hpp"

namespace braid::files {
namespace {

using wire::EntryKind;
using wire::ManifestEntry;

TEST(FileLayout, RangesSpanFilesAndSkipEmptyOnes) {
  std::vector<ManifestEntry> e = {{EntryKind::file, "a", 10, 0644, 0, 0, ""},
                                  {EntryKind::directory, "d", 0, 0755, 0, 0, ""},
                                  {EntryKind::file, "d/empty", 0, 0644, 0, 0, ""},
                                  {EntryKind::file, "d/b", 5, 0644, 0, 0, ""},
                                  {EntryKind::file, "c", 20, 0644, 0, 0, ""}};
  FileLayout layout(e);
  EXPECT_EQ(layout.total(), 35u);
  std::vector<Extent> seen;
  EXPECT_TRUE(layout.for_each(8, 10, [&](const Extent& x) {
    seen.push_back(x);
    return true;
  }));
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].entry, 0u);
  EXPECT_EQ(seen[0].file_offset, 8u);
  EXPECT_EQ(seen[0].length, 2u);
  EXPECT_EQ(seen[1].entry, 3u);
  EXPECT_EQ(seen[1].length, 5u);
  EXPECT_EQ(seen[2].entry, 4u);
  EXPECT_EQ(seen[2].file_offset, 0u);
  EXPECT_EQ(seen[2].length, 3u);
  EXPECT_FALSE(layout.for_each(30, 10, [](const Extent&) { return true; }));  // past the end
}

// Issue 18: a streamed walk's layout lets go of its front. A walk through
// it that began before goes on over the files still held (its indices
// shift under it), and ends (false) when the next file was let go.
TEST(FileLayout, ItLetsGoOfItsFrontOnlyOnceAsManyGoAsStayAndAWalkOverItSurvives) {
  FileLayout layout;
  for (size_t i = 0; i < 8; ++i) layout.append({EntryKind::file, "f" + std::to_string(i), 10, 0644, 0, 0, ""}, i);
  layout.release_before(3);  // 3 would go, 5 stay: nothing yet
  EXPECT_EQ(layout.files(), 8u);
  EXPECT_EQ(layout.start_of(3), 30u);
  layout.release_before(4);  // 4 go, 4 stay
  EXPECT_EQ(layout.files(), 4u);
  EXPECT_EQ(layout.start_of(4), 40u);
  EXPECT_EQ(layout.start_of(0), 40u);  // the first held
  EXPECT_EQ(layout.start_of(8), 80u);  // none: the total
  EXPECT_FALSE(layout.for_each(35, 10, [](const Extent&) { return true; }));  // begins in a file let go
  // A walk from entry 5 on: entries 4 and 5 go while it is in entry 6
  // (the indices shift under it), and it goes on to entry 7.
  std::vector<size_t> seen;
  EXPECT_TRUE(layout.for_each(55, 20, [&](const Extent& x) {
    seen.push_back(x.entry);
    if (x.entry == 6) layout.release_before(6);
    return true;
  }));
  EXPECT_EQ(seen, (std::vector<size_t>{5, 6, 7}));
  EXPECT_EQ(layout.files(), 2u);
  // A file let go ahead of the walk ends it.
  FileLayout more;
  for (size_t i = 0; i < 4; ++i) more.append({EntryKind::file, "g" + std::to_string(i), 10, 0644, 0, 0, ""}, i);
  seen.clear();
  EXPECT_FALSE(more.for_each(5, 20, [&](const Extent& x) {
    seen.push_back(x.entry);
    more.release_before(2);
    return true;
  }));
  EXPECT_EQ(seen, (std::vector<size_t>{0}));
}

TEST(FileLayout, EachFilesSizeIsTheGapToTheNextAsTheLayoutGrows) {
  // Laid out part by part (protocol 9): the last file's size comes from the
  // total until the next one is appended, then from the next file's start.
  FileLayout layout;
  layout.append({EntryKind::directory, "d", 0, 0755, 0, 0, ""}, 0);
  layout.append({EntryKind::file, "d/a", 7, 0644, 0, 0, ""}, 1);
  EXPECT_EQ(layout.files(), 1u);
  auto extents = [&](uint64_t offset, uint64_t length) {
    std::vector<Extent> out;
    const bool whole = layout.for_each(offset, length, [&](const Extent& x) {
      out.push_back(x);
      return true;
    });
    return std::make_pair(whole, out);
  };
  EXPECT_FALSE(extents(0, 8).first);  // past the end of the only file
  layout.append({EntryKind::file, "d/empty", 0, 0644, 0, 0, ""}, 2);
  layout.append({EntryKind::symlink, "d/l", 0, 0777, 0, 0, "a"}, 3);
  // The largest index an offer may have keeps its value in 32 bits.
  const size_t last = wire::kMaxOfferEntries - 1;
  layout.append({EntryKind::file, "d/b", 3, 0644, 0, 0, ""}, last);
  EXPECT_EQ(layout.files(), 2u);
  EXPECT_EQ(layout.total(), 10u);
  auto [whole, seen] = extents(5, 5);
  EXPECT_TRUE(whole);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].entry, 1u);
  EXPECT_EQ(seen[0].file_offset, 5u);
  EXPECT_EQ(seen[0].length, 2u);  // d/a ends where d/b starts
  EXPECT_EQ(seen[1].entry, last);
  EXPECT_EQ(seen[1].file_offset, 0u);
  EXPECT_EQ(seen[1].transfer_offset, 7u);
  EXPECT_EQ(seen[1].length, 3u);  // d/b ends at the total
  EXPECT_FALSE(extents(9, 2).first);
}

TEST(PieceHasher, BothAlgorithmsAndStreaming) {
  const std::string text = "the quick brown fox";
  std::span<const uint8_t> all(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  for (auto algo : {wire::HashAlgo::xxh3_128, wire::HashAlgo::sha256}) {
    PieceHasher one(algo), parts(algo);
    one.update(all);
    parts.update(all.first(5));
    parts.update(all.subspan(5));
    const auto a = one.finish(), b = parts.finish();
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.size, algo == wire::HashAlgo::sha256 ? 32 : 16);
  }
  PieceHasher sha(wire::HashAlgo::sha256);
  sha.update(all);
  EXPECT_EQ(sha.finish().hex().substr(0, 16), "9ecb36561341d18e");  // sha256("the quick brown fox")
}

TEST(RootHash, OrderFreeButCoverageSensitive) {
  auto d = [](uint8_t v) {
    wire::Digest x;
    x.size = 16;
    x.bytes.fill(v);
    return x;
  };
  std::vector<PieceRecord> a = {{0, 10, d(1)}, {10, 5, d(2)}, {15, 5, d(3)}};
  std::vector<PieceRecord> shuffled = {a[2], a[0], a[1]};
  EXPECT_EQ(root_hash(wire::HashAlgo::xxh3_128, a), root_hash(wire::HashAlgo::xxh3_128, shuffled));
  auto changed = a;
  changed[1].hash = d(9);
  EXPECT_NE(root_hash(wire::HashAlgo::xxh3_128, a), root_hash(wire::HashAlgo::xxh3_128, changed));
  EXPECT_TRUE(pieces_tile(a, 20));
  EXPECT_FALSE(pieces_tile(a, 21));
  EXPECT_FALSE(pieces_tile({a[0], a[2]}, 20));  // a gap
  EXPECT_FALSE(pieces_tile({a[0], {5, 15, d(1)}}, 20));  // an overlap
}

}  // namespace
}  // namespace braid::files
