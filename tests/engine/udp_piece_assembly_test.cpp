// A piece on a UDP lane: ranges in any order, twice, before or after the
// header; the hash is over the piece's bytes in order, and only those, and
// bytes() is exactly what gets written.
#include "engine/transfer/udp_piece_assembly.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/files/piece_hasher.hpp"

namespace braid::transfer {
namespace {

constexpr uint64_t kChunk = 1 << 20;           // the chunk's offset in the transfer
constexpr uint64_t kChunkLength = 1 << 20;
constexpr uint64_t kBase = kChunk + 4096;      // the piece's: a byte range inside the chunk

UdpPieceAssembly assembly() { return UdpPieceAssembly(wire::HashAlgo::xxh3_128, kChunk, kChunkLength); }

std::vector<uint8_t> bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

wire::Digest hash_of(std::span<const uint8_t> b) {
  files::PieceHasher h(wire::HashAlgo::xxh3_128);
  h.update(b);
  return h.finish();
}

// Cuts `data` into ranges of `size`, feeds them in `order` (indexes; may repeat).
void feed(UdpPieceAssembly& a, const std::vector<uint8_t>& data, size_t size, const std::vector<size_t>& order) {
  for (size_t i : order) {
    const size_t at = i * size;
    const size_t n = std::min(size, data.size() - at);
    a.add(kBase + at, std::span<const uint8_t>(data.data() + at, n));
  }
}

TEST(UdpPieceAssembly, InOrderGivesThePieceBytesExactly) {
  auto data = bytes(10000, 1);
  UdpPieceAssembly a = assembly();
  EXPECT_EQ(a.buffered_bytes(), 0u);  // nothing allocated before the first byte
  a.set_header(kBase, data.size(), hash_of(data));
  feed(a, data, 1400, {0, 1, 2, 3, 4, 5, 6});
  EXPECT_FALSE(a.complete());
  feed(a, data, 1400, {7});
  ASSERT_TRUE(a.complete());
  EXPECT_TRUE(a.hash_ok());
  EXPECT_EQ(a.offset(), kBase);
  ASSERT_EQ(a.bytes().size(), data.size());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), a.bytes().begin()));
}

TEST(UdpPieceAssembly, ShuffledDuplicatedAndHeaderLast) {
  auto data = bytes(50000, 2);
  std::vector<size_t> order;
  for (size_t i = 0; i < 36; ++i) order.push_back(i);
  order.push_back(3);
  order.push_back(35);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  UdpPieceAssembly a = assembly();
  feed(a, data, 1400, order);
  EXPECT_FALSE(a.complete());  // no header yet: the piece's extent is unknown
  a.set_header(kBase, data.size(), hash_of(data));
  ASSERT_TRUE(a.complete());
  EXPECT_TRUE(a.hash_ok());
  EXPECT_TRUE(std::equal(data.begin(), data.end(), a.bytes().begin()));
}

TEST(UdpPieceAssembly, HeaderOrBytesOutsideTheChunkAreIgnored) {
  auto data = bytes(2000, 6);
  UdpPieceAssembly a = assembly();
  a.set_header(kChunk + kChunkLength - 1000, data.size(), hash_of(data));  // crosses the chunk's end
  EXPECT_FALSE(a.has_header());
  std::vector<uint8_t> noise(100, 0xee);
  a.add(kChunk - 50, noise);  // straddles the chunk's start: only its last 50 bytes count
  a.add(kChunk + kChunkLength, noise);
  a.set_header(kChunk, 50, hash_of(std::span<const uint8_t>(noise.data(), 50)));
  ASSERT_TRUE(a.complete());
  EXPECT_TRUE(a.hash_ok());
}

TEST(UdpPieceAssembly, GapKeepsItIncomplete) {
  auto data = bytes(14000, 3);
  UdpPieceAssembly a = assembly();
  a.set_header(kBase, data.size(), hash_of(data));
  feed(a, data, 1400, {0, 1, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_FALSE(a.complete());
  feed(a, data, 1400, {2});
  ASSERT_TRUE(a.complete());
  EXPECT_TRUE(a.hash_ok());
}

TEST(UdpPieceAssembly, OverlappingRangesAndBytesOutsideThePiece) {
  auto data = bytes(5000, 4);
  UdpPieceAssembly a = assembly();
  a.set_header(kBase, data.size(), hash_of(data));
  std::vector<uint8_t> noise(100, 0xee);
  a.add(kBase - 100, noise);            // before the piece: ignored
  a.add(kBase + data.size(), noise);    // after it: ignored
  a.add(kBase, std::span<const uint8_t>(data.data(), 3000));
  a.add(kBase + 1000, std::span<const uint8_t>(data.data() + 1000, 4000));  // overlaps the hashed prefix
  ASSERT_TRUE(a.complete());
  EXPECT_TRUE(a.hash_ok());
}

TEST(UdpPieceAssembly, WrongBytesFailTheHash) {
  auto data = bytes(3000, 5);
  auto other = data;
  other[1234] ^= 1;
  UdpPieceAssembly a = assembly();
  a.set_header(kBase, data.size(), hash_of(data));
  a.add(kBase, other);
  ASSERT_TRUE(a.complete());
  EXPECT_FALSE(a.hash_ok());
}

}  // namespace
}  // namespace braid::transfer
