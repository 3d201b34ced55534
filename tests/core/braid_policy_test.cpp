// braid's own decisions, driven by hand in virtual time.
#include <gtest/gtest.h>

#include <numeric>

#include "core/policies/planning.hpp"
#include "scheduler_harness.hpp"

namespace braid::core {
using namespace braid::core::testing;

namespace {

Scheduler make(Bytes total) { return Scheduler(ChunkPlan(total, Bytes::mib(1)), make_policy("braid")); }

Bytes assigned_to(const Drained& d, LaneId l) {
  Bytes b;
  for (const auto& a : d.assigns)
    if (a.lane == l) b += a.length;
  return b;
}

}  // namespace

TEST(BraidPolicy, UnmeasuredLaneGetsOneSmallProbeUntilItsFirstAck) {
  Scheduler s = make(Bytes::mib(64));
  const LaneId known = s.add_lane({"known", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  const LaneId unknown = s.add_lane({"unknown", std::nullopt, std::nullopt}, at_ms(0));
  const Drained d = drain(s, at_ms(0));
  size_t probes = 0;
  for (const auto& a : d.assigns) {
    if (a.lane != unknown) continue;
    ++probes;
    EXPECT_LE(a.length, Bytes::kib(64));
  }
  EXPECT_EQ(probes, 1u);
  EXPECT_GT(assigned_to(d, known), Bytes::mib(1));
}

TEST(BraidPolicy, WhenEveryMeasuredLaneDiedANewLaneTakesTheirPiecesWhole) {
  // The UDP lanes of a path that drops UDP each sent their probe, heard
  // nothing and closed: the probes are overdue (sent, so never cut again).
  // The TCP lanes that replace them are unmeasured; they must take the
  // overdue pieces as their probes — before, nobody took anything again.
  Scheduler s = make(Bytes::mib(32));
  const LaneId a = s.add_lane({"udp-a", std::nullopt, std::nullopt}, at_ms(0));
  const LaneId b = s.add_lane({"udp-b", std::nullopt, std::nullopt}, at_ms(0));
  for (const auto& as : drain(s, at_ms(0)).assigns) s.on_send_started(as.lane, as.piece, at_ms(0));
  s.on_lane_closed(a, at_ms(2000));
  s.on_lane_closed(b, at_ms(2000));
  ASSERT_TRUE(s.plan().next_overdue());
  const LaneId c = s.add_lane({"tcp-c", std::nullopt, Duration::millis(1)}, at_ms(2001));
  const LaneId d = s.add_lane({"tcp-d", std::nullopt, Duration::millis(1)}, at_ms(2001));
  const Drained got = drain(s, at_ms(2001));
  ASSERT_EQ(got.assigns.size(), 2u);
  EXPECT_NE(got.assigns[0].lane, got.assigns[1].lane);
  for (const auto& as : got.assigns) {
    EXPECT_TRUE(as.lane == c || as.lane == d);
    EXPECT_EQ(as.length, Bytes::kib(64));  // the probes, whole
  }
  EXPECT_FALSE(s.plan().next_overdue());
}

TEST(BraidPolicy, KeepsMoreThanOnePieceInFlightWhenThePathHoldsIt) {
  Scheduler s = make(Bytes::mib(64));
  // 100 Mbit/s x 100 ms holds 1.25 MB: one chunk in flight would idle the lane.
  const LaneId l = s.add_lane({"long", Rate::mbit(100), Duration::millis(100)}, at_ms(0));
  const Drained d = drain(s, at_ms(0));
  EXPECT_GE(assigned_to(d, l), Bytes::mib(3));
  EXPECT_LE(assigned_to(d, l), Bytes::mib(4)) << "but no more than rate x RTT x 2 + one piece";
}

TEST(BraidPolicy, TransportRateWidensTheRoomButNotTheEstimate) {
  // A lane whose pieces say 10 Mbit/s while its transport already measures
  // 200 Mbit/s (start-up: pieces complete late): room is sized by the transport.
  auto run = [](bool transport) {
    Scheduler s = make(Bytes::mib(64));
    const LaneId l = s.add_lane({"udp", Rate::mbit(10), Duration::millis(40)}, at_ms(0));
    if (transport) s.on_transport_rate(l, Rate::mbit(200), at_ms(0));
    EXPECT_EQ(s.planning_rate(l), Rate::mbit(10));
    return assigned_to(drain(s, at_ms(0)), l);
  };
  const Bytes without = run(false), with = run(true);
  EXPECT_LE(without, Bytes::mib(2));
  EXPECT_GE(with, Bytes::mib(4)) << "250 ms of 200 Mbit/s (the floor) plus a piece";
}

TEST(BraidPolicy, SlowLaneTakesNoMoreThanItCanFinishInTime) {
  Scheduler s = make(Bytes::mib(4));
  const LaneId fast = s.add_lane({"fast", Rate::mbit(1000), Duration::millis(1)}, at_ms(0));
  const LaneId slow = s.add_lane({"slow", Rate::mbit(10), Duration::millis(1)}, at_ms(0));
  Drained all;
  // Run the whole transfer by hand: each lane sends in order at its rate.
  Time now = at_ms(0);
  for (int round = 0; round < 200 && !s.complete(); ++round) {
    Drained d = drain(s, now);
    all.assigns.insert(all.assigns.end(), d.assigns.begin(), d.assigns.end());
    for (const auto& a : d.assigns) {
      s.on_send_started(a.lane, a.piece, now);
      const Rate r = a.lane == fast ? Rate::mbit(1000) : Rate::mbit(10);
      s.on_ack(a.lane, a.piece, now + r.transfer_time(a.length) + Duration::millis(1), r.transfer_time(a.length));
    }
    now += Duration::millis(5);
  }
  ASSERT_TRUE(s.complete());
  // The fluid share of the slow lane is 1 % of 4 MiB; it must not hold a chunk.
  EXPECT_LT(assigned_to(all, slow), Bytes::kib(128));
  EXPECT_GT(assigned_to(all, fast), Bytes::mib(3));
}

TEST(BraidPolicy, CutsTheLastChunksSoEqualLanesFinishTogether) {
  Scheduler s = make(Bytes::kib(1536));
  const LaneId a = s.add_lane({"a", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  const LaneId b = s.add_lane({"b", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  const Drained d = drain(s, at_ms(0));
  EXPECT_EQ(assigned_to(d, a) + assigned_to(d, b), Bytes::kib(1536));
  EXPECT_NEAR(assigned_to(d, a).as_double(), assigned_to(d, b).as_double(), 64 * 1024.0);
  for (const auto& x : d.assigns) EXPECT_LT(x.length, Bytes::mib(1)) << "byte ranges, not whole chunks";
}

TEST(BraidPolicy, OverduePieceGoesToTheLaneThatCompletesItFirst) {
  Scheduler s = make(Bytes::mib(2));
  const LaneId slow = s.add_lane({"slow", Rate::mbit(20), Duration::millis(10)}, at_ms(0));
  const LaneId fast = s.add_lane({"fast", Rate::mbit(200), Duration::millis(10)}, at_ms(0));
  Drained d = drain(s, at_ms(0));
  for (const auto& a : d.assigns) s.on_send_started(a.lane, a.piece, at_ms(0));
  // Every piece goes quiet; the fast lane's acks come back, the slow lane stalls.
  for (const auto& a : d.assigns)
    if (a.lane == fast) s.on_ack(fast, a.piece, at_ms(60), Duration::millis(42));
  s.on_timeout(at_ms(5000));
  d = drain(s, at_ms(5000));
  ASSERT_FALSE(d.assigns.empty());
  for (const auto& a : d.assigns) EXPECT_EQ(a.lane, fast);
  EXPECT_GE(s.stats(slow).stalls, 1u);
}

TEST(BraidPolicy, StalledLaneIsProbedAgainAfterBackOff) {
  Scheduler s = make(Bytes::mib(512));
  const LaneId a = s.add_lane({"a", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  s.add_lane({"b", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
  Drained d = drain(s, at_ms(0));
  for (const auto& x : d.assigns)
    if (x.lane == a) s.on_send_started(a, x.piece, at_ms(0));
  s.on_timeout(at_ms(3000));
  ASSERT_GE(s.stats(a).stalls, 1u);
  d = drain(s, at_ms(3000));
  EXPECT_EQ(assigned_to(d, a), Bytes(0)) << "no work right after a stall";
  const Time wake = *s.poll_timeout();
  EXPECT_GT(wake, at_ms(3000));
  d = drain(s, wake);
  EXPECT_EQ(assigned_to(d, a), Bytes::kib(64)) << "one small probe after the back-off";
}

// The end of a metered transfer (integration.paths.metered): a piece whose
// two copies are both on the metered link's lanes (one rescued it from the
// other, whose lane had stalled on another piece) while the fast link's
// lanes idle. With two copies
// at most, nobody could copy it again and the transfer waited for the slow
// lanes (0.63 s in the trace); a third copy goes to the fast lane, which
// beats them both. The wake-up for a third copy comes when it beats every
// copy: with one of them as fast as the idle lane, once that one is late.
TEST(BraidPolicy, APieceOnlySlowLanesHoldIsCopiedToAnIdleFastLane) {
  auto setup = [](Scheduler& s, bool one_copy_fast) {
    const LaneId fast = s.add_lane({"fast", Rate::mbit(100), Duration::millis(1)}, at_ms(0));
    const LaneId slow_a = s.add_lane({"slow-a", Rate::mbit(5), Duration::millis(1)}, at_ms(0));
    const LaneId other = s.add_lane({"other", Rate::mbit(one_copy_fast ? 100 : 5), Duration::millis(1)}, at_ms(0));
    return std::tuple{fast, slow_a, other};
  };
  for (bool one_copy_fast : {false, true}) {
    ScriptedPolicy* scripted = nullptr;
    auto policy = std::make_unique<ScriptedPolicy>("braid");
    scripted = policy.get();
    Scheduler s(ChunkPlan(Bytes::mib(1), Bytes::mib(1)), std::move(policy));
    const auto [fast, slow_a, other] = setup(s, one_copy_fast);
    scripted->script()->push_back(Pick{slow_a, 0, std::nullopt, false, std::nullopt});
    scripted->script()->push_back(Pick{other, 0, std::nullopt, true, std::nullopt});
    drain(s, at_ms(0));
    s.on_send_started(slow_a, 0, at_ms(0));
    s.on_send_started(other, 0, at_ms(0));
    ASSERT_EQ(s.active_copies(0), 2u);
    const Time now = at_ms(20);
    const auto d = planning::best_duplicate(s, fast, now);
    if (one_copy_fast) {
      // One copy lands in ~85 ms on a lane as fast: a third would waste it.
      EXPECT_FALSE(d) << "copied although a copy as fast is on its way";
      // Once it is late by more than the idle lane needs (85 ms + 85 ms +
      // 10 %: ~179 ms), the slow copy still far off, a third copy pays.
      const auto when = planning::next_duplicate_time(s, now);
      ASSERT_TRUE(when) << "never woken: the end waits for the slow copy";
      EXPECT_GT(*when, at_ms(170));
      EXPECT_LT(*when, at_ms(190)) << "woken only when the slow copy is late too";
      EXPECT_FALSE(planning::best_duplicate(s, fast, *when - Duration::millis(5)));
      EXPECT_TRUE(planning::best_duplicate(s, fast, *when)) << "woken for a copy pick() declines";
    } else {
      // The slow copies land after ~1.7 s; the fast lane delivers in ~105 ms.
      ASSERT_TRUE(d) << "no third copy: the transfer waits for the slow lanes";
      EXPECT_EQ(d->lane, fast);
      EXPECT_TRUE(d->duplicate);
      EXPECT_EQ(d->piece, 0u);
      // And nothing past three copies.
      EXPECT_FALSE(planning::best_duplicate(s, fast, now, 2));
    }
  }
}

}  // namespace braid::core
