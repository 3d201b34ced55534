// Several links and their timed events, in virtual time.
#include "model/lab_model.hpp"

#include <gtest/gtest.h>

#include "model/spec_parser.hpp"
#include "virtual_time_driver.hpp"

namespace netlab {
namespace {

using namespace std::chrono_literals;

LinkSpec link(const char* text) {
  auto parsed = parse_link(text);
  EXPECT_TRUE(parsed) << parsed.error;
  return *parsed.value;
}

LinkEvent event(const char* text) {
  auto parsed = parse_event(text);
  EXPECT_TRUE(parsed) << parsed.error;
  return parsed.value->at(0);
}

void schedule_all(LabModel& lab, const char* text, TimePoint now) {
  auto parsed = parse_event(text);
  ASSERT_TRUE(parsed) << parsed.error;
  for (const auto& e : *parsed.value) ASSERT_EQ(lab.schedule(e, now), "");
}

std::size_t delivered_by(LabModel& lab, std::size_t l, Dir d, TimePoint t) {
  std::size_t n = 0;
  while (lab.poll_delivery(l, d, t)) ++n;
  return n;
}

TEST(LabModel, EventTakesEffectAtItsOwnTimeEvenWhenPolledLate) {
  LabModel lab({link("A:rate=100Mbit")}, 1);
  schedule_all(lab, "at=60050us,link=A,rate=10Mbit", at(0s));
  for (std::uint64_t i = 0; i < 1000; ++i) lab.handle_packet(0, Dir::up, test::packet(i), at(0s));
  // 501 packets at 120 us (the 501st was on the wire at 60.05 ms), then 1.2 ms each.
  EXPECT_EQ(delivered_by(lab, 0, Dir::up, at(100ms)), 501u + 33u);
}

TEST(LabModel, OutageWindowDropsExactlyTheArrivalsInIt) {
  LabModel lab({link("A:delay=1ms")}, 1);
  schedule_all(lab, "at=1s,link=A,outage=1s", at(0s));
  std::size_t delivered = 0;
  for (int ms = 0; ms < 3000; ms += 10) {
    delivered += delivered_by(lab, 0, Dir::up, at(std::chrono::milliseconds(ms)));
    lab.handle_packet(0, Dir::up, test::packet(ms), at(std::chrono::milliseconds(ms)));
  }
  delivered += delivered_by(lab, 0, Dir::up, at(4s));
  // Sent at 0..2990 ms: the 100 sent in [1 s, 2 s) are dropped. The one sent
  // at 990 ms arrived at 991 ms, before the link went dark.
  EXPECT_EQ(lab.direction(0, Dir::up).counters().drop_outage, 100u);
  EXPECT_EQ(delivered, 200u);
}

TEST(LabModel, DirectionsAreIndependent) {
  LabModel lab({link("A:up.rate=10Mbit,down.rate=1Mbit")}, 1);
  lab.handle_packet(0, Dir::up, test::packet(1), at(0s));
  lab.handle_packet(0, Dir::down, test::packet(2), at(0s));
  EXPECT_EQ(lab.poll_timeout(), at(1200us));  // the faster direction is due first
  EXPECT_TRUE(lab.poll_delivery(0, Dir::up, at(1200us)));
  EXPECT_FALSE(lab.poll_delivery(0, Dir::down, at(1200us)));
  EXPECT_TRUE(lab.poll_delivery(0, Dir::down, at(12ms)));
}

TEST(LabModel, StarEventReachesEveryLink) {
  LabModel lab({link("A"), link("B")}, 1);
  ASSERT_EQ(lab.schedule(event("link=*,up.loss=5%"), at(0s)), "");
  lab.apply_due_events(at(0s));
  EXPECT_DOUBLE_EQ(lab.direction(0, Dir::up).params().loss, 0.05);
  EXPECT_DOUBLE_EQ(lab.direction(1, Dir::up).params().loss, 0.05);
  EXPECT_DOUBLE_EQ(lab.direction(1, Dir::down).params().loss, 0.0);
}

TEST(LabModel, UnknownLinkIsRefused) {
  LabModel lab({link("A")}, 1);
  EXPECT_NE(lab.schedule(event("link=Z,outage"), at(0s)), "");
}

TEST(LabModel, NextTimeoutIncludesPendingEvents) {
  LabModel lab({link("A")}, 1);
  EXPECT_FALSE(lab.poll_timeout());
  schedule_all(lab, "at=2s,link=A,outage", at(1s));
  EXPECT_EQ(lab.poll_timeout(), at(3s));
}

TEST(LabModel, GsoOnlyWhereLossIsPerPacket) {
  LabModel lab({link("A:down.loss=1%"), link("B:gso=off")}, 1);
  EXPECT_TRUE(lab.wants_gso(0, Dir::up));
  EXPECT_FALSE(lab.wants_gso(0, Dir::down));
  EXPECT_FALSE(lab.wants_gso(1, Dir::up));
  ASSERT_EQ(lab.schedule(event("link=A,loss=0"), at(0s)), "");
  lab.apply_due_events(at(0s));
  EXPECT_TRUE(lab.wants_gso(0, Dir::down));
}

// A super-packet crosses the model in one piece: on a slow link its first
// segment would arrive a whole burst late, so the kernel cuts it there.
TEST(LabModel, GsoOnlyWhereASuperPacketCrossesAboutAsItsSegmentsWould) {
  LabModel lab({link("A:rate=4Mbit"), link("B:rate=100Mbit,up.rate=10Mbit"), link("C:rate=32Mbit")}, 1);
  EXPECT_FALSE(lab.wants_gso(0, Dir::up));
  EXPECT_FALSE(lab.wants_gso(0, Dir::down));
  EXPECT_FALSE(lab.wants_gso(1, Dir::up));
  EXPECT_TRUE(lab.wants_gso(1, Dir::down));
  EXPECT_TRUE(lab.wants_gso(2, Dir::up));
  // A rate change is a change of mind, as a loss change is.
  ASSERT_EQ(lab.schedule(event("link=A,rate=200Mbit"), at(0s)), "");
  lab.apply_due_events(at(0s));
  EXPECT_TRUE(lab.wants_gso(0, Dir::up));
}

TEST(LabModel, EachDirectionHasItsOwnLossStream) {
  LabModel lab({link("A:loss=50%")}, 3);
  std::vector<bool> up, down;
  for (std::uint64_t i = 0; i < 64; ++i) {
    const TimePoint t = at(std::chrono::milliseconds(i));
    lab.handle_packet(0, Dir::up, test::packet(i), t);
    lab.handle_packet(0, Dir::down, test::packet(i), t);
    up.push_back(lab.poll_delivery(0, Dir::up, t).has_value());
    down.push_back(lab.poll_delivery(0, Dir::down, t).has_value());
  }
  EXPECT_NE(up, down);
}

}  // namespace
}  // namespace netlab
