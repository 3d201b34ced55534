// The fixed rules of MISSION.md §1 as the shared Scheduler applies them.
#include <gtest/gtest.h>

#include "scheduler_harness.hpp"

namespace braid::core {
using namespace braid::core::testing;

namespace {

struct Rig {
  explicit Rig(std::string_view rules_of, Bytes total = Bytes::mib(8)) {
    auto policy = std::make_unique<ScriptedPolicy>(rules_of);
    script = policy->script();
    sched = std::make_unique<Scheduler>(ChunkPlan(total, Bytes::mib(1)), std::move(policy));
  }
  void assign(LaneId lane, PieceId piece) { script->push_back(Pick{lane, piece, std::nullopt, false, std::nullopt}); }
  std::shared_ptr<std::deque<Pick>> script;
  std::unique_ptr<Scheduler> sched;
};

}  // namespace

TEST(SchedulerRules, StallDeadlineIsAtLeastOneSecond) {
  Rig rig("braid");
  const LaneId fast = rig.sched->add_lane({"fast", Rate::mbit(1000), Duration::micros(100)}, at_ms(0));
  rig.assign(fast, 0);
  drain(*rig.sched, at_ms(0));
  rig.sched->on_send_started(fast, 0, at_ms(0));
  // 1 MiB at 1 Gbit/s is 8 ms, but a stall is only declared after 1 s.
  EXPECT_GE(*rig.sched->poll_timeout(), at_ms(1000));
  rig.sched->on_timeout(at_ms(999));
  EXPECT_EQ(rig.sched->stats(fast).stalls, 0u);
}

TEST(SchedulerRules, StallDeadlineIsUncappedForSlowLanes) {
  Rig rig("braid");
  const LaneId bt = rig.sched->add_lane({"bt", Rate::mbit(1.5), Duration::millis(40)}, at_ms(0));
  rig.assign(bt, 0);
  drain(*rig.sched, at_ms(0));
  rig.sched->on_send_started(bt, 0, at_ms(0));
  // One 1 MiB chunk at 1.5 Mbit/s takes 5.6 s; the deadline must be later.
  EXPECT_GT(*rig.sched->poll_timeout(), at_ms(5600));
  rig.sched->on_timeout(at_ms(5700));
  EXPECT_EQ(rig.sched->stats(bt).stalls, 0u);
  EXPECT_EQ(rig.sched->on_ack(bt, 0, at_ms(5700), Duration::millis(5600)), AckKind::first_delivery);
}

TEST(SchedulerRules, StallClockStartsWhenTheLaneStartsSending) {
  Rig rig("braid");
  const LaneId l = rig.sched->add_lane({"l", Rate::mbit(10), Duration::millis(10)}, at_ms(0));
  rig.assign(l, 0);
  rig.assign(l, 1);
  drain(*rig.sched, at_ms(0));
  rig.sched->on_send_started(l, 0, at_ms(0));
  // Piece 1 waits behind piece 0 and has no deadline until it starts.
  rig.sched->on_ack(l, 0, at_ms(850), Duration::millis(839));
  rig.sched->on_send_started(l, 1, at_ms(850));
  rig.sched->on_timeout(at_ms(1500));
  EXPECT_EQ(rig.sched->stats(l).stalls, 0u);
  EXPECT_GE(*rig.sched->poll_timeout(), at_ms(1850));
}

TEST(SchedulerRules, StallCancelsOnlyOnTheStalledLaneAndKeepsThePieceOverdue) {
  Rig rig("braid");
  const LaneId a = rig.sched->add_lane({"a", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  const LaneId b = rig.sched->add_lane({"b", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  rig.assign(a, 0);
  rig.script->push_back(Pick{b, 0, std::nullopt, true, std::nullopt});  // a second copy on b
  drain(*rig.sched, at_ms(0));
  rig.sched->on_send_started(a, 0, at_ms(0));
  rig.sched->on_send_started(b, 0, at_ms(500));
  rig.sched->on_timeout(at_ms(1100));  // only a's deadline has passed
  const Drained d = drain(*rig.sched, at_ms(1100));
  ASSERT_EQ(d.cancels.size(), 1u);
  EXPECT_EQ(d.cancels[0].lane, a);
  EXPECT_EQ(rig.sched->stats(a).stalls, 1u);
  EXPECT_EQ(rig.sched->active_copies(0), 1u) << "b's copy lives on";
  EXPECT_EQ(rig.sched->on_ack(b, 0, at_ms(1200)), AckKind::first_delivery);
}

TEST(SchedulerRules, StalledPieceWithNoOtherCopyGoesToTheOverdueList) {
  Rig rig("braid");
  const LaneId a = rig.sched->add_lane({"a", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  rig.assign(a, 0);
  rig.assign(a, 1);
  drain(*rig.sched, at_ms(0));
  rig.sched->on_send_started(a, 0, at_ms(0));
  rig.sched->on_timeout(at_ms(1100));
  const Drained d = drain(*rig.sched, at_ms(1100));
  EXPECT_EQ(d.cancels.size(), 2u) << "the stalled piece and the one queued behind it";
  EXPECT_EQ(rig.sched->plan().piece(0).state, PieceState::overdue);
  EXPECT_EQ(*rig.sched->plan().next_overdue(), 0u);
  // A late ack of the stalled piece still delivers it and teaches the estimate.
  const Rate lowered = rig.sched->estimator(a).rate();
  EXPECT_EQ(rig.sched->on_ack(a, 0, at_ms(1300), Duration::millis(84)), AckKind::first_delivery);
  EXPECT_EQ(rig.sched->plan().piece(0).state, PieceState::delivered);
  EXPECT_GT(rig.sched->estimator(a).rate(), lowered);
}

TEST(SchedulerRules, FirstDeliveryCancelsEveryOtherCopy) {
  Rig rig("braid");
  const LaneId a = rig.sched->add_lane({"a", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  const LaneId b = rig.sched->add_lane({"b", Rate::mbit(10), Duration::millis(10)}, at_ms(0));
  rig.assign(b, 0);
  rig.script->push_back(Pick{a, 0, std::nullopt, true, std::nullopt});
  drain(*rig.sched, at_ms(0));
  rig.sched->on_send_started(b, 0, at_ms(0));
  rig.sched->on_send_started(a, 0, at_ms(0));
  EXPECT_EQ(rig.sched->on_ack(a, 0, at_ms(100), Duration::millis(84)), AckKind::first_delivery);
  const Drained d = drain(*rig.sched, at_ms(100));
  ASSERT_EQ(d.cancels.size(), 1u);
  EXPECT_EQ(d.cancels[0].lane, b);
  EXPECT_EQ(rig.sched->stats(b).abandoned, 1u);
  // If b's bytes were already on the wire, its ack is a counted duplicate.
  EXPECT_EQ(rig.sched->on_ack(b, 0, at_ms(900)), AckKind::duplicate);
  EXPECT_EQ(rig.sched->stats(b).duplicates, 1u);
}

TEST(SchedulerRules, ClosedLaneReturnsItsPieces) {
  Rig rig("braid");
  const LaneId a = rig.sched->add_lane({"a", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  rig.sched->add_lane({"b", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  rig.assign(a, 0);
  rig.assign(a, 1);
  drain(*rig.sched, at_ms(0));
  rig.sched->on_send_started(a, 0, at_ms(0));
  rig.sched->on_lane_closed(a, at_ms(50));
  EXPECT_FALSE(rig.sched->lane_alive(a));
  EXPECT_EQ(rig.sched->plan().unassigned_bytes(), Bytes::mib(8));
  EXPECT_EQ(rig.sched->on_ack(a, 0, at_ms(60)), AckKind::unknown);
}

TEST(SchedulerRules, PieceOvertakenByALaterOneIsLostNotALaneStall) {
  Rig rig("braid");
  const LaneId a = rig.sched->add_lane({"a", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  rig.assign(a, 0);
  rig.assign(a, 1);
  drain(*rig.sched, at_ms(0));
  rig.sched->on_send_started(a, 0, at_ms(0));
  rig.sched->on_send_started(a, 1, at_ms(84));
  // Piece 1 is acked, piece 0 never will be: it was lost on the way.
  rig.sched->on_ack(a, 1, at_ms(178), Duration::millis(84));
  const Rate before = rig.sched->estimator(a).rate();
  ASSERT_LT(*rig.sched->poll_timeout(), at_ms(200)) << "a reorder window, not the 1 s stall deadline";
  rig.sched->on_timeout(at_ms(200));
  EXPECT_EQ(rig.sched->plan().piece(0).state, PieceState::overdue);
  EXPECT_EQ(rig.sched->consecutive_stalls(a), 0u) << "the lane is moving: no probe mode";
  EXPECT_EQ(rig.sched->estimator(a).rate(), before) << "a loss says nothing about the lane's rate";
}

TEST(SchedulerRules, OutOfOrderLanesAreNotJudgedByOrder) {
  Rig rig("braid");
  // A UDP lane resends lost packets itself: pieces complete out of order.
  LaneConfig cfg{"udp", Rate::mbit(100), Duration::millis(10)};
  cfg.in_order = false;
  const LaneId a = rig.sched->add_lane(cfg, at_ms(0));
  rig.assign(a, 0);
  rig.assign(a, 1);
  drain(*rig.sched, at_ms(0));
  rig.sched->on_send_started(a, 0, at_ms(0));
  rig.sched->on_send_started(a, 1, at_ms(84));
  rig.sched->on_ack(a, 1, at_ms(178), Duration::millis(84));
  EXPECT_GE(*rig.sched->poll_timeout(), at_ms(1000)) << "piece 0 keeps its stall deadline";
  rig.sched->on_timeout(at_ms(300));
  EXPECT_EQ(rig.sched->plan().piece(0).state, PieceState::in_flight);
}

TEST(SchedulerRules, UnknownAcksAreIgnored) {
  Rig rig("braid");
  const LaneId a = rig.sched->add_lane({"a", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  EXPECT_EQ(rig.sched->on_ack(a, 5, at_ms(1)), AckKind::unknown);
  EXPECT_EQ(rig.sched->on_ack(7, 0, at_ms(1)), AckKind::unknown);
  EXPECT_EQ(rig.sched->on_ack(a, 100000, at_ms(1)), AckKind::unknown);
  EXPECT_EQ(rig.sched->plan().delivered_bytes(), Bytes(0));
}


// An engine TCP lane reports a piece started when it hands it to the kernel,
// which takes 512 KiB beyond what is on the wire: several pieces are
// "sending" at once. They still leave one after another.
TEST(SchedulerRules, PiecesSendingAtOnceAreProjectedOneAfterAnother) {
  Rig rig("braid");
  const LaneId bt = rig.sched->add_lane({"bt", Rate::mbit(1.5), Duration::millis(40)}, at_ms(0));
  rig.assign(bt, 0);
  rig.assign(bt, 1);
  drain(*rig.sched, at_ms(0));
  rig.sched->on_send_started(bt, 0, at_ms(0));
  rig.sched->on_send_started(bt, 1, at_ms(1));
  const Duration piece = Rate::mbit(1.5).transfer_time(Bytes::mib(1));  // 5.6 s
  const auto& f = rig.sched->flights(bt);
  EXPECT_EQ(rig.sched->predicted_ack(bt, f[1], at_ms(2)), at_ms(0) + piece * 2.0 + Duration::millis(40));
  // Half-way through the first piece, a piece and a half is left to send.
  const Time mid = at_ms(0) + piece / 2.0;
  EXPECT_NEAR(rig.sched->unsent(bt, mid).as_double(), 1.5 * (1 << 20), 2.0);
  EXPECT_EQ(rig.sched->free_at(bt, mid), at_ms(0) + piece * 2.0);
}

}  // namespace braid::core
