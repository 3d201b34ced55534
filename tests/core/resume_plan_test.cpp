// Resume in the core: ranges the receiver already holds become delivered
// pieces before the first Assign (ChunkPlan::mark_resumed,
// Scheduler::mark_resumed), and the scheduler then sends exactly the rest.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/chunk_plan.hpp"
#include "core/policy_registry.hpp"
#include "core/scheduler.hpp"
#include "scheduler_harness.hpp"

namespace braid::core {
namespace {

ByteRange range(uint64_t offset, uint64_t length) { return {Bytes(offset), Bytes(length)}; }

// The plan's pieces, sorted by offset, must tile the transfer exactly.
void expect_pieces_tile(const ChunkPlan& p) {
  std::vector<Piece> pieces;
  for (PieceId id = 0; id < p.piece_count(); ++id) pieces.push_back(p.piece(id));
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.offset < b.offset; });
  Bytes at;
  for (const auto& piece : pieces) {
    EXPECT_EQ(piece.offset, at);
    EXPECT_GT(piece.length.count(), 0u);
    EXPECT_EQ(piece.chunk, piece.offset.count() / p.chunk_size().count());
    at = piece.offset + piece.length;
  }
  EXPECT_EQ(at, p.total());
}

}  // namespace

TEST(ResumePlan, WholeChunksBecomeDeliveredPieces) {
  ChunkPlan p(Bytes::mib(4), Bytes::mib(1));
  auto ids = p.mark_resumed({range(0, 1 << 20), range(2 << 20, 1 << 20)});
  ASSERT_TRUE(ids[0] && ids[1]);
  EXPECT_EQ(*ids[0], 0u);
  EXPECT_EQ(*ids[1], 2u);
  EXPECT_EQ(p.piece(0).state, PieceState::delivered);
  EXPECT_EQ(p.delivered_bytes(), Bytes::mib(2));
  EXPECT_EQ(p.unassigned_bytes(), Bytes::mib(2));
  EXPECT_EQ(p.delivered_chunks(), 2u);
  EXPECT_TRUE(p.chunk_delivered(2));
  // The queue holds the rest, in transfer order.
  EXPECT_EQ(*p.next_pending(), 1u);
  p.mark_in_flight(1);
  EXPECT_EQ(*p.next_pending(), 3u);
  expect_pieces_tile(p);
}

TEST(ResumePlan, ARangeInsideAChunkCutsItIntoThreePieces) {
  ChunkPlan p(Bytes::mib(1), Bytes::mib(1));
  auto ids = p.mark_resumed({range(256 << 10, 256 << 10)});
  ASSERT_TRUE(ids[0]);
  const Piece& mid = p.piece(*ids[0]);
  EXPECT_EQ(mid.offset, Bytes::kib(256));
  EXPECT_EQ(mid.length, Bytes::kib(256));
  EXPECT_EQ(mid.state, PieceState::delivered);
  ASSERT_EQ(p.piece_count(), 3u);
  EXPECT_EQ(p.unassigned_bytes(), Bytes::kib(768));
  EXPECT_FALSE(p.chunk_delivered(0));
  expect_pieces_tile(p);
  // Head first, then the tail.
  const PieceId head = *p.next_pending();
  EXPECT_EQ(p.piece(head).offset, Bytes(0));
  EXPECT_EQ(p.piece(head).length, Bytes::kib(256));
  p.mark_in_flight(head);
  const PieceId tail = *p.next_pending();
  EXPECT_EQ(p.piece(tail).offset, Bytes::kib(512));
  EXPECT_EQ(p.piece(tail).length, Bytes::kib(512));
  p.mark_in_flight(tail);
  EXPECT_TRUE(p.mark_delivered(head));
  EXPECT_TRUE(p.mark_delivered(tail));
  EXPECT_TRUE(p.complete());
  EXPECT_TRUE(p.chunk_delivered(0));
}

TEST(ResumePlan, SeveralRangesOfOneChunkAndTheShortLastChunk) {
  ChunkPlan p(Bytes::mib(2) + Bytes(1000), Bytes::mib(1));
  auto ids = p.mark_resumed({range(1 << 20, 4096), range((1 << 20) + 8192, 4096), range(2 << 20, 1000),
                             range((1 << 20) + 4096, 4096)});
  for (const auto& id : ids) EXPECT_TRUE(id);
  EXPECT_EQ(p.delivered_bytes(), Bytes(3 * 4096 + 1000));
  EXPECT_TRUE(p.chunk_delivered(2));
  expect_pieces_tile(p);
}

TEST(ResumePlan, RefusesRangesThatCannotBeOnePiece) {
  ChunkPlan p(Bytes::mib(3), Bytes::mib(1));
  auto ids = p.mark_resumed({
      range(0, 0),                          // empty
      range((1 << 20) - 10, 20),            // crosses a chunk boundary
      range(3 << 20, 1),                    // beyond the end
      range((3 << 20) - 10, 20),            // runs past the end
      range(UINT64_MAX - 5, 10),            // overflow
      range(1 << 20, 1 << 20),              // fine
      range((1 << 20) + 100, 10),           // overlaps the one before
  });
  for (size_t i = 0; i < 5; ++i) EXPECT_FALSE(ids[i]) << i;
  EXPECT_TRUE(ids[5]);
  EXPECT_FALSE(ids[6]);
  EXPECT_EQ(p.delivered_bytes(), Bytes::mib(1));
  expect_pieces_tile(p);
}

TEST(ResumePlan, ASecondCallFindsTheCutPieces) {
  ChunkPlan p(Bytes::mib(1), Bytes::mib(1));
  ASSERT_TRUE(p.mark_resumed({range(0, 1000)})[0]);
  ASSERT_TRUE(p.mark_resumed({range(5000, 1000)})[0]);
  EXPECT_EQ(p.delivered_bytes(), Bytes(2000));
  expect_pieces_tile(p);
}

TEST(ResumePlan, NothingIsTakenOnceAPieceWasHandedOut) {
  ChunkPlan p(Bytes::mib(2), Bytes::mib(1));
  p.mark_in_flight(0);
  EXPECT_TRUE(p.started());
  auto ids = p.mark_resumed({range(1 << 20, 1 << 20)});
  EXPECT_FALSE(ids[0]);
  EXPECT_EQ(p.delivered_bytes(), Bytes(0));
}

TEST(ResumePlan, EverythingResumedIsComplete) {
  ChunkPlan p(Bytes::mib(2), Bytes::mib(1));
  p.mark_resumed({range(0, 1 << 20), range(1 << 20, 1 << 20)});
  EXPECT_TRUE(p.complete());
  EXPECT_FALSE(p.next_pending());
}

// The scheduler with the real braid policy sends exactly the bytes not
// resumed, each once, and never touches a resumed piece.
TEST(ResumeScheduler, SendsOnlyWhatWasNotResumed) {
  Scheduler s(ChunkPlan(Bytes::mib(16) + Bytes(12345), Bytes::mib(1)), make_policy("braid"));
  std::vector<ByteRange> held;
  for (uint64_t c = 0; c < 17; c += 2) held.push_back(range(c << 20, c == 16 ? 12345 : (1 << 20)));
  held.push_back(range((3 << 20) + 65536, 65536));  // part of a chunk
  auto ids = s.mark_resumed(held);
  uint64_t resumed = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_TRUE(ids[i]) << i;
    resumed += held[i].length.count();
  }
  EXPECT_EQ(s.plan().delivered_bytes(), Bytes(resumed));

  const LaneId a = s.add_lane({"a", Rate::mbit(800), Duration::millis(1)}, Time::zero());
  const LaneId b = s.add_lane({"b", Rate::mbit(400), Duration::millis(2)}, Time::zero());
  uint64_t sent = 0;
  Time now = Time::zero();
  for (int round = 0; round < 10000 && !s.complete(); ++round) {
    now = now + Duration::millis(1);
    for (const auto& x : testing::drain(s, now).assigns) {
      for (const auto& id : ids) EXPECT_NE(x.piece, *id) << "a resumed piece was assigned";
      const auto& piece = s.plan().piece(x.piece);
      for (const auto& h : held)
        EXPECT_TRUE(piece.offset + piece.length <= h.offset || piece.offset >= h.offset + h.length)
            << "assigned bytes overlap a resumed range";
      s.on_send_started(x.lane, x.piece, now);
      if (s.on_ack(x.lane, x.piece, now + Duration::millis(1)) == AckKind::first_delivery) sent += x.length.count();
    }
  }
  ASSERT_TRUE(s.complete());
  EXPECT_EQ(sent + resumed, s.plan().total().count());
  EXPECT_EQ(s.stats(a).useful_bytes + s.stats(b).useful_bytes, Bytes(sent));
}

TEST(ResumeScheduler, NothingIsTakenAfterTheFirstAssign) {
  Scheduler s(ChunkPlan(Bytes::mib(4), Bytes::mib(1)), make_policy("braid"));
  s.add_lane({"a", Rate::mbit(800), Duration::millis(1)}, Time::zero());
  ASSERT_FALSE(testing::drain(s, Time::zero()).assigns.empty());
  auto ids = s.mark_resumed({range(3 << 20, 1 << 20)});
  EXPECT_FALSE(ids[0]);
}

}  // namespace braid::core
