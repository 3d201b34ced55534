// A piece on a UDP lane: ranges in any order, twice, before or after the
// header; the hash is over the piece's bytes in order, and only those.
#include "engine/transfer/udp_piece_assembly.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/files/piece_hasher.hpp"

namespace braid::transfer {
namespace {

constexpr uint64_t kBase = 1 << 20;  // the piece's offset in the transfer

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

TEST(UdpPieceAssembly, InOrderHashesWithoutKeepingBytes) {
  auto data = bytes(10000, 1);
  UdpPieceAssembly a(wire::HashAlgo::xxh3_128);
  a.set_header(kBase, data.size(), hash_of(data));
  feed(a, data, 1400, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(a.kept_bytes(), 0u);
  ASSERT_TRUE(a.complete());
  EXPECT_TRUE(a.hash_ok());
}

TEST(UdpPieceAssembly, ShuffledDuplicatedAndHeaderLast) {
  auto data = bytes(50000, 2);
  std::vector<size_t> order;
  for (size_t i = 0; i < 36; ++i) order.push_back(i);
  order.push_back(3);
  order.push_back(35);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  UdpPieceAssembly a(wire::HashAlgo::xxh3_128);
  feed(a, data, 1400, order);
  EXPECT_FALSE(a.complete());  // no header yet: nothing can be hashed
  EXPECT_GT(a.kept_bytes(), 0u);
  a.set_header(kBase, data.size(), hash_of(data));
  ASSERT_TRUE(a.complete());
  EXPECT_TRUE(a.hash_ok());
  EXPECT_EQ(a.kept_bytes(), 0u);
}

TEST(UdpPieceAssembly, GapKeepsItIncomplete) {
  auto data = bytes(14000, 3);
  UdpPieceAssembly a(wire::HashAlgo::xxh3_128);
  a.set_header(kBase, data.size(), hash_of(data));
  feed(a, data, 1400, {0, 1, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_FALSE(a.complete());
  feed(a, data, 1400, {2});
  ASSERT_TRUE(a.complete());
  EXPECT_TRUE(a.hash_ok());
}

TEST(UdpPieceAssembly, OverlappingRangesAndBytesOutsideThePiece) {
  auto data = bytes(5000, 4);
  UdpPieceAssembly a(wire::HashAlgo::xxh3_128);
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
  UdpPieceAssembly a(wire::HashAlgo::xxh3_128);
  a.set_header(kBase, data.size(), hash_of(data));
  a.add(kBase, other);
  ASSERT_TRUE(a.complete());
  EXPECT_FALSE(a.hash_ok());
}

}  // namespace
}  // namespace braid::transfer
