// Piece buffers are handed out again once freed, never more than the pool
// may keep wait in it, and a buffer let go after its pool is gone is freed.
#include "engine/transfer/piece_buffers.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "engine/transfer/udp_piece_assembly.hpp"

namespace braid::transfer {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(PieceBuffers, AFreedBufferIsTheNextPiecesBuffer) {
  auto pool = PieceBuffers::make(4 * kMiB);
  uint8_t* first = nullptr;
  {
    auto a = pool->take(kMiB);
    first = a.get();
    std::memset(a.get(), 7, kMiB);  // every byte of it can be written
    EXPECT_EQ(pool->kept_bytes(), 0u);
  }
  EXPECT_EQ(pool->kept_bytes(), kMiB);
  auto b = pool->take(kMiB);
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(pool->reused(), 1u);
  EXPECT_EQ(pool->kept_bytes(), 0u);
}

TEST(PieceBuffers, ASmallerKeptBufferIsNotGivenForABiggerPiece) {
  auto pool = PieceBuffers::make(4 * kMiB);
  { auto small = pool->take(100 * 1024); }  // a short last piece: kept, 128 KiB
  EXPECT_EQ(pool->kept_bytes(), 128u * 1024);
  auto big = pool->take(kMiB);
  EXPECT_EQ(pool->reused(), 0u);
  std::memset(big.get(), 1, kMiB);
  auto small_again = pool->take(64 * 1024);  // the kept one is big enough
  EXPECT_EQ(pool->reused(), 1u);
  EXPECT_EQ(pool->kept_bytes(), 0u);
}

TEST(PieceBuffers, ThePoolKeepsNoMoreThanItsLimit) {
  auto pool = PieceBuffers::make(3 * kMiB);
  {
    std::vector<std::shared_ptr<uint8_t[]>> out;
    for (int i = 0; i < 10; ++i) out.push_back(pool->take(kMiB));  // what is out is not limited
  }
  EXPECT_EQ(pool->kept_bytes(), 3 * kMiB);
}

TEST(PieceBuffers, ABufferOutlivesItsPool) {
  std::shared_ptr<uint8_t[]> held;
  {
    auto pool = PieceBuffers::make();
    held = pool->take(kMiB);
  }
  std::memset(held.get(), 3, kMiB);
  held.reset();  // freed here: the pool it came from is gone (a give-back would touch freed memory)
}

TEST(PieceBuffers, ThreadsTakeAndGiveBackAtOnce) {
  auto pool = PieceBuffers::make(8 * kMiB);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 200; ++i) {
        auto b = pool->take(64 * 1024 * (1 + (i + t) % 16));
        b[0] = static_cast<uint8_t>(i);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_LE(pool->kept_bytes(), 8 * kMiB);
  EXPECT_GT(pool->reused(), 0u);
}

TEST(PieceBuffers, AnAssembledPieceGivesItsBufferBackWhenItIsGone) {
  auto pool = PieceBuffers::make();
  std::vector<uint8_t> data(kMiB, 0x5a);
  {
    UdpPieceAssembly a(wire::HashAlgo::xxh3_128, 0, kMiB, pool);
    EXPECT_EQ(a.buffered_bytes(), 0u);
    a.add(0, data);
    EXPECT_EQ(a.buffered_bytes(), kMiB);
    EXPECT_EQ(pool->kept_bytes(), 0u);
  }
  EXPECT_EQ(pool->kept_bytes(), kMiB);
  UdpPieceAssembly again(wire::HashAlgo::xxh3_128, kMiB, kMiB, pool);
  again.add(kMiB, data);
  EXPECT_EQ(pool->reused(), 1u);
}

}  // namespace
}  // namespace braid::transfer
