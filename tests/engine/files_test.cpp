// The transfer's byte space over files, piece and root hashes.
#include <gtest/gtest.h>

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
