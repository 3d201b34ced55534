// One test per fault the seed found in its old push scheduler (MISSION.md §1):
// `seed-old` suffers it, `braid` does not. All in simulated time.
#include <gtest/gtest.h>


#include "scheduler_harness.hpp"
#include "sim/scenario.hpp"
#include "sim/simulator.hpp"

namespace braid::core {
using namespace braid::core::testing;

namespace {

sim::Scenario load(const std::string& name) {
  sim::Scenario sc;
  EXPECT_EQ(sim::load_scenario_file(std::string(BRAID_SOURCE_DIR) + "/scenarios/" + name + ".scn", sc), "");
  return sc;
}

const sim::LaneResult& lane(const sim::RunResult& r, const std::string& name) {
  for (const auto& l : r.lanes)
    if (l.name == name) return l;
  throw std::runtime_error("no lane " + name);
}

}  // namespace

// Fault 1: a fixed 400 Mbit/s hint for a 19 Mbit/s lane made the first chunks miss their deadlines.
TEST(SeedFaults, FixedStartingHintMakesFirstChunksMissDeadlines) {
  const sim::Scenario sc = load("seed-2g4");
  EXPECT_GT(lane(sim::run(sc, "seed-old"), "wifi").stalls, 0u);
  EXPECT_EQ(lane(sim::run(sc, "braid"), "wifi").stalls, 0u);
}

// Fault 2: late acks after a stall were ignored, so the estimate fell and never recovered.
TEST(SeedFaults, IgnoredLateAcksLeaveTheEstimateLow) {
  for (const char* rules : {"seed-old", "braid"}) {
    auto policy = std::make_unique<ScriptedPolicy>(rules);
    auto script = policy->script();
    Scheduler s(ChunkPlan(Bytes::mib(16), Bytes::mib(1)), std::move(policy));
    const LaneId l = s.add_lane({"wifi", Rate::mbit(19), Duration::millis(8)}, at_ms(0));
    // Steady delivery at 19 Mbit/s, then one piece whose ack comes 3 s late.
    Time t = at_ms(0);
    const Duration piece_time = Rate::mbit(19).transfer_time(Bytes::mib(1));
    for (PieceId p = 0; p < 4; ++p) {
      script->push_back(Pick{l, p, std::nullopt, false, std::nullopt});
      drain(s, t);
      s.on_send_started(l, p, t);
      s.on_written(l, p, t);
      t += piece_time + Duration::millis(8);
      s.on_ack(l, p, t, piece_time);
    }
    script->push_back(Pick{l, 4, std::nullopt, false, std::nullopt});
    drain(s, t);
    s.on_send_started(l, 4, t);
    s.on_written(l, 4, t);
    s.on_timeout(t + Duration::seconds(3));
    ASSERT_EQ(s.stats(l).stalls, 1u) << rules;
    s.on_ack(l, 4, t + Duration::seconds(4), piece_time);
    const double mbit = s.estimator(l).rate().bits_per_second() / 1e6;
    if (std::string(rules) == "seed-old") {
      EXPECT_LT(mbit, 5) << "the late ack taught nothing";
    } else {
      EXPECT_GT(mbit, 15) << "the late ack restored the estimate";
    }
  }
}

// Fault 3: a 3 s cap on the stall deadline, shorter than one Bluetooth chunk (5.6 s).
TEST(SeedFaults, CappedDeadlineKeepsBluetoothFromEverDelivering) {
  const sim::Scenario sc = load("seed-5ghz");
  const auto old = sim::run(sc, "seed-old");
  EXPECT_EQ(lane(old, "bt").useful_bytes, Bytes(0));
  EXPECT_GT(lane(old, "bt").stalls, 0u);
  const auto fixed = sim::run(sc, "braid");
  EXPECT_GT(lane(fixed, "bt").useful_bytes, Bytes(0));
  EXPECT_EQ(lane(fixed, "bt").stalls, 0u);
}

// Fault 4: on a stall every lane was told to drop the chunk, the replacement included.
TEST(SeedFaults, StallDropsTheReplacementToo) {
  for (const char* rules : {"seed-old", "braid"}) {
    auto policy = std::make_unique<ScriptedPolicy>(rules);
    auto script = policy->script();
    Scheduler s(ChunkPlan(Bytes::mib(4), Bytes::mib(1)), std::move(policy));
    const LaneId a = s.add_lane({"a", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
    const LaneId b = s.add_lane({"b", Rate::mbit(100), Duration::millis(10)}, at_ms(0));
    script->push_back(Pick{a, 0, std::nullopt, false, std::nullopt});
    drain(s, at_ms(0));
    s.on_send_started(a, 0, at_ms(0));
    // The replacement copy goes out on b just before a's copy is declared stalled.
    script->push_back(Pick{b, 0, std::nullopt, true, std::nullopt});
    drain(s, at_ms(1000));
    s.on_send_started(b, 0, at_ms(1000));
    s.on_timeout(at_ms(1100));
    ASSERT_EQ(s.stats(a).stalls, 1u) << rules;
    const Drained d = drain(s, at_ms(1100));
    const bool b_cancelled = std::any_of(d.cancels.begin(), d.cancels.end(), [&](const Cancel& c) { return c.lane == b; });
    if (std::string(rules) == "seed-old") {
      EXPECT_TRUE(b_cancelled) << "the replacement was dropped too";
    } else {
      EXPECT_FALSE(b_cancelled);
      EXPECT_EQ(s.on_ack(b, 0, at_ms(1200)), AckKind::first_delivery);
    }
  }
}

// Fault 5: rates from socket-write completion, once divided by a 1 µs interval.
TEST(SeedFaults, WriteCompletionTimesInflateTheEstimate) {
  for (const char* rules : {"seed-old", "braid"}) {
    auto policy = std::make_unique<ScriptedPolicy>(rules);
    auto script = policy->script();
    Scheduler s(ChunkPlan(Bytes::mib(8), Bytes::mib(1)), std::move(policy));
    const LaneId l = s.add_lane({"wifi", Rate::mbit(370), Duration::millis(4)}, at_ms(0));
    const Duration piece_time = Rate::mbit(370).transfer_time(Bytes::mib(1));
    Time t = at_ms(0);
    for (PieceId p = 0; p < 4; ++p) {
      script->push_back(Pick{l, p, std::nullopt, false, std::nullopt});
      drain(s, t);
      s.on_send_started(l, p, t);
      const Time acked = t + piece_time + Duration::millis(4);
      // The kernel reports the write done a microsecond before the ack is read.
      s.on_written(l, p, acked - Duration::micros(1));
      s.on_ack(l, p, acked, piece_time);
      t = acked;
    }
    const double mbit = s.estimator(l).rate().bits_per_second() / 1e6;
    if (std::string(rules) == "seed-old") {
      EXPECT_GT(mbit, 1e6) << "absurd: terabits per second";
    } else {
      EXPECT_NEAR(mbit, 370 * 0.97, 370 * 0.1) << "acks only";
    }
  }
}

}  // namespace braid::core
