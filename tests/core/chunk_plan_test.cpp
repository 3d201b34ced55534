#include <gtest/gtest.h>

#include "core/chunk_plan.hpp"

namespace braid::core {

TEST(ChunkPlan, CutsTransferIntoChunksWithShortLastChunk) {
  ChunkPlan p(Bytes::mib(2) + Bytes(10), Bytes::mib(1));
  ASSERT_EQ(p.chunk_count(), 3u);
  EXPECT_EQ(p.chunk_length(0), Bytes::mib(1));
  EXPECT_EQ(p.chunk_length(2), Bytes(10));
  EXPECT_EQ(p.unassigned_bytes(), p.total());
}

TEST(ChunkPlan, SplitKeepsOrderAndCoversTheChunkExactly) {
  ChunkPlan p(Bytes::mib(1), Bytes::mib(1));
  const PieceId head = p.split(0, Bytes::kib(256));
  EXPECT_EQ(p.piece(head).length, Bytes::kib(256));
  ASSERT_EQ(p.piece_count(), 2u);
  EXPECT_EQ(p.piece(1).offset, Bytes::kib(256));
  EXPECT_EQ(p.piece(1).length, Bytes::kib(768));
  EXPECT_EQ(*p.next_pending(), head);
  p.mark_in_flight(head);
  EXPECT_EQ(*p.next_pending(), 1u);
  EXPECT_TRUE(p.mark_delivered(head));
  EXPECT_FALSE(p.chunk_delivered(0));
  p.mark_in_flight(1);
  EXPECT_TRUE(p.mark_delivered(1));
  EXPECT_TRUE(p.chunk_delivered(0));
  EXPECT_TRUE(p.complete());
}

// An offer answered part by part (protocol 9): the plan grows behind the
// pieces already out, and none of them changes its bytes.
TEST(ChunkPlan, ExtendAppendsWholeChunksBehindWhatIsOut) {
  ChunkPlan p(Bytes::mib(2), Bytes::mib(1));
  const PieceId head = p.split(0, Bytes::kib(256));
  p.mark_in_flight(head);
  EXPECT_TRUE(p.mark_delivered(head));
  const PieceId tail = *p.next_pending();  // the rest of chunk 0
  ASSERT_EQ(p.piece(tail).offset, Bytes::kib(256));
  p.mark_in_flight(tail);  // out on a lane
  p.extend(Bytes::mib(3) + Bytes(10));
  ASSERT_EQ(p.chunk_count(), 4u);
  EXPECT_EQ(p.total(), Bytes::mib(3) + Bytes(10));
  EXPECT_EQ(p.chunk_length(3), Bytes(10));
  EXPECT_EQ(p.piece(tail).length, Bytes::kib(768));  // the piece out is the same bytes
  // Pending in transfer order: chunk 1 (there before), then 2 and 3.
  EXPECT_EQ(p.piece(*p.next_pending()).offset, Bytes::mib(1));
  EXPECT_EQ(p.unassigned_bytes(), Bytes::mib(2) + Bytes(10));
  EXPECT_FALSE(p.complete());
  std::vector<PieceId> order;
  while (auto id = p.next_pending()) {
    order.push_back(*id);
    p.mark_in_flight(*id);
    p.mark_delivered(*id);
  }
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(p.piece(order[2]).offset, Bytes::mib(3));
  EXPECT_TRUE(p.mark_delivered(tail));
  EXPECT_TRUE(p.complete());
  EXPECT_EQ(p.delivered_chunks(), 4u);
  p.extend(Bytes::mib(1));  // never shrinks
  EXPECT_EQ(p.total(), Bytes::mib(3) + Bytes(10));
}

// A sparse file's holes in the chunks a growth adds (an offer answered part
// by part): delivered pieces of their own, never handed out; the rest of
// those chunks pending behind every piece there was, in transfer order.
TEST(ChunkPlan, AGrowthTakesTheHolesOfItsNewChunksAsDelivered) {
  ChunkPlan p(Bytes::mib(1), Bytes::mib(1));
  const PieceId first = *p.next_pending();
  p.mark_in_flight(first);
  const auto ids = p.extend(Bytes::mib(3), {{Bytes::mib(1) + Bytes::kib(256), Bytes::kib(512)},  // inside chunk 1
                                            {Bytes::mib(2), Bytes::mib(1)},                        // chunk 2 whole
                                            {Bytes::kib(10), Bytes::kib(10)}});                    // an old chunk: not taken
  ASSERT_EQ(ids.size(), 3u);
  ASSERT_TRUE(ids[0] && ids[1]);
  EXPECT_FALSE(ids[2]);
  EXPECT_EQ(p.piece(*ids[0]).state, PieceState::delivered);
  EXPECT_EQ(p.piece(*ids[0]).length, Bytes::kib(512));
  EXPECT_EQ(p.delivered_bytes(), Bytes::kib(512) + Bytes::mib(1));
  EXPECT_EQ(p.delivered_chunks(), 1u);  // chunk 2
  EXPECT_EQ(p.unassigned_bytes(), Bytes::kib(512));
  std::vector<Bytes> order;
  while (auto id = p.next_pending()) {
    order.push_back(p.piece(*id).offset);
    p.mark_in_flight(*id);
    p.mark_delivered(*id);
  }
  EXPECT_EQ(order, (std::vector<Bytes>{Bytes::mib(1), Bytes::mib(1) + Bytes::kib(768)}));
  EXPECT_FALSE(p.complete());
  EXPECT_TRUE(p.mark_delivered(first));
  EXPECT_TRUE(p.complete());
}

TEST(ChunkPlan, DeliveredExactlyOnce) {
  ChunkPlan p(Bytes::mib(1), Bytes::mib(1));
  p.mark_in_flight(0);
  EXPECT_TRUE(p.mark_delivered(0));
  EXPECT_FALSE(p.mark_delivered(0));
  EXPECT_EQ(p.delivered_bytes(), Bytes::mib(1));
}

TEST(ChunkPlan, OverduePiecesComeBeforePendingOnes) {
  ChunkPlan p(Bytes::mib(3), Bytes::mib(1));
  p.mark_in_flight(0);
  p.mark_in_flight(1);
  p.mark_overdue(1);
  EXPECT_EQ(*p.next_overdue(), 1u);
  EXPECT_EQ(*p.next_pending(), 2u);
  EXPECT_EQ(p.unassigned_bytes(), Bytes::mib(2));
  // A late ack of an overdue piece still delivers it and takes it off the list.
  EXPECT_TRUE(p.mark_delivered(1));
  EXPECT_FALSE(p.next_overdue());
  EXPECT_EQ(p.unassigned_bytes(), Bytes::mib(1));
}

}  // namespace braid::core
