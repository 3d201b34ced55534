// One link direction in virtual time: rate, delay, queue, jitter, loss,
// outages and CoDel, each checked against exact expected times or counts.
#include "model/link_direction.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "virtual_time_driver.hpp"

namespace netlab {
namespace {

using namespace std::chrono_literals;
using test::run;
using test::steady;

constexpr BitRate k100Mbit = BitRate::bits_per_second(100'000'000);  // 1500 B take 120 us

DirectionParams params(BitRate rate, Duration delay = 0ns, QueueLimit queue = QueueLimit::packets(100000)) {
  DirectionParams p;
  p.rate = rate;
  p.delay = delay;
  p.queue = queue;
  return p;
}

TEST(LinkDirection, SerialisesBackToBackPacketsAtTheRate) {
  LinkDirection link(params(k100Mbit), 1);
  const auto out = run(link, steady(at(0s), 0ns, 1000));
  ASSERT_EQ(out.size(), 1000u);
  for (std::size_t k = 0; k < out.size(); ++k) {
    ASSERT_EQ(out[k].tag, k);
    ASSERT_EQ(out[k].at, at(120us * static_cast<Duration::rep>(k + 1))) << "packet " << k;
  }
  EXPECT_EQ(link.counters().tx_bytes, 1'500'000u);
}

TEST(LinkDirection, AddsTheOneWayDelay) {
  LinkDirection link(params(BitRate::unlimited(), 10ms), 1);
  const auto out = run(link, steady(at(5ms), 1ms, 3));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].at, at(15ms));
  EXPECT_EQ(out[2].at, at(17ms));
}

TEST(LinkDirection, RateAndDelayAddUp) {
  LinkDirection link(params(k100Mbit, 10ms), 1);
  const auto out = run(link, steady(at(0s), 0ns, 10));
  ASSERT_EQ(out.size(), 10u);
  EXPECT_EQ(out[0].at, at(10ms + 120us));
  EXPECT_EQ(out[9].at, at(10ms + 1200us));
}

TEST(LinkDirection, LateCallerDoesNotSlowTheLink) {
  // The serialiser is self-clocked: polling once, late, gives the same times.
  LinkDirection link(params(k100Mbit), 1);
  for (std::uint64_t i = 0; i < 100; ++i) link.handle_packet(test::packet(i), at(0s));
  std::vector<std::uint64_t> tags;
  while (auto p = link.poll_delivery(at(6ms))) tags.push_back(p->tag);
  EXPECT_EQ(tags.size(), 50u);  // 6 ms / 120 us
}

TEST(LinkDirection, DropTailLimitInPackets) {
  LinkDirection link(params(k100Mbit, 0ns, QueueLimit::packets(10)), 1);
  const auto out = run(link, steady(at(0s), 0ns, 100));
  // One packet goes straight onto the wire, ten wait, the rest are dropped.
  EXPECT_EQ(out.size(), 11u);
  EXPECT_EQ(link.counters().drop_queue, 89u);
  EXPECT_EQ(link.counters().queue_hwm_packets, 10u);
  EXPECT_EQ(link.counters().queue_hwm_bytes, 15000u);
}

TEST(LinkDirection, DropTailLimitInBytes) {
  LinkDirection link(params(k100Mbit, 0ns, QueueLimit::bytes(15000)), 1);
  const auto out = run(link, steady(at(0s), 0ns, 100));
  EXPECT_EQ(out.size(), 11u);
  EXPECT_EQ(link.counters().drop_queue, 89u);
}

TEST(LinkDirection, DropTailLimitInTimeFollowsTheRate) {
  // 10 ms at 12 Mbit/s is 15000 bytes: ten 1500-byte packets.
  LinkDirection link(params(BitRate::bits_per_second(12'000'000), 0ns, QueueLimit::duration(10ms)), 1);
  const auto out = run(link, steady(at(0s), 0ns, 100));
  EXPECT_EQ(out.size(), 11u);
}

TEST(LinkDirection, EmptyQueueAdmitsASuperPacketLargerThanItsLimit) {
  LinkDirection link(params(k100Mbit, 0ns, QueueLimit::bytes(1000)), 1);
  link.handle_packet(test::packet(1, 1500), at(0s));                // on the wire at once
  link.handle_packet(test::packet(2, 65000, 44), at(0s));           // queue empty: admitted
  link.handle_packet(test::packet(3, 1500), at(0s));                // queue not empty, over limit
  EXPECT_EQ(link.counters().drop_queue, 1u);
  EXPECT_EQ(link.counters().queue_packets, 44u);  // counted in wire packets
}

TEST(LinkDirection, FullQueueReproducesBufferbloat) {
  // Offered at twice the rate, a 1 MB queue at 100 Mbit/s adds ~80 ms.
  LinkDirection link(params(k100Mbit, 5ms, QueueLimit::bytes(1'000'000)), 1);
  auto arrivals = steady(at(0s), 60us, 20000);
  std::vector<TimePoint> sent;
  for (const auto& a : arrivals) sent.push_back(a.at);
  const auto out = run(link, std::move(arrivals));
  const auto& last = out.back();
  const Duration latency = last.at - sent[last.tag];
  EXPECT_GT(latency, 5ms + 79ms);
  EXPECT_LT(latency, 5ms + 81ms);
  EXPECT_GT(link.counters().drop_queue, 9000u);
}

TEST(LinkDirection, JitterStaysInBoundsNeverReordersAndKeepsTheMean) {
  DirectionParams p = params(BitRate::unlimited(), 10ms);
  p.jitter = 2ms;
  LinkDirection link(p, 42);
  const auto out = run(link, steady(at(0s), 1ms, 5000));
  ASSERT_EQ(out.size(), 5000u);
  double total_ms = 0;
  std::set<Duration::rep> distinct;
  for (std::size_t k = 0; k < out.size(); ++k) {
    ASSERT_EQ(out[k].tag, k);  // in order, and never held back by the one before:
    if (k > 0) {
      ASSERT_GT(out[k].at, out[k - 1].at);
    }
    const Duration d = out[k].at - at(1ms * static_cast<Duration::rep>(k));
    ASSERT_GE(d, 8ms);
    ASSERT_LE(d, 12ms);
    total_ms += std::chrono::duration<double, std::milli>(d).count();
    distinct.insert(d.count() / 100'000);
  }
  EXPECT_NEAR(total_ms / 5000, 10.0, 0.2);  // even with a packet every millisecond
  EXPECT_GT(distinct.size(), 30u);  // it really varies
}

std::vector<std::uint64_t> delivered_tags(double loss, std::uint64_t seed, std::size_t count) {
  DirectionParams p = params(BitRate::unlimited());
  p.loss = loss;
  LinkDirection link(p, seed);
  std::vector<std::uint64_t> tags;
  for (const auto& d : run(link, steady(at(0s), 10us, count))) tags.push_back(d.tag);
  return tags;
}

TEST(LinkDirection, LossIsSeededAndDeterministic) {
  const auto a = delivered_tags(0.01, 7, 100000);
  const auto b = delivered_tags(0.01, 7, 100000);
  const auto c = delivered_tags(0.01, 8, 100000);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const double lost = 1.0 - static_cast<double>(a.size()) / 100000.0;
  EXPECT_NEAR(lost, 0.01, 0.0015);
}

TEST(LinkDirection, LostPacketsStillUseLinkTime) {
  DirectionParams p = params(k100Mbit);
  p.loss = 1.0;
  LinkDirection link(p, 1);
  link.handle_packet(test::packet(1), at(0s));
  link.handle_packet(test::packet(2), at(0s));
  EXPECT_FALSE(link.poll_delivery(at(1s)));
  EXPECT_EQ(link.counters().drop_loss, 2u);
}

TEST(LinkDirection, OutageDropsQueueInFlightAndArrivals) {
  LinkDirection link(params(BitRate::bits_per_second(12'000'000), 10ms), 1);  // 1 ms per packet
  auto out = run(link, steady(at(0s), 0ns, 20), at(5ms));  // nothing delivered yet: 10 ms delay
  EXPECT_TRUE(out.empty());
  DirectionPatch dark;
  dark.dark = true;
  link.handle_patch(dark, at(5500us));
  // 5 packets were in flight (serialised by 5 ms), 1 on the wire, 14 queued: all lost.
  EXPECT_EQ(link.counters().drop_outage, 20u);
  link.handle_packet(test::packet(100), at(6ms));
  EXPECT_EQ(link.counters().drop_outage, 21u);
  DirectionPatch light;
  light.dark = false;
  link.handle_patch(light, at(7ms));
  out = run(link, {{at(8ms), test::packet(200)}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].tag, 200u);
  EXPECT_EQ(out[0].at, at(8ms + 1ms + 10ms));
}

TEST(LinkDirection, RateChangeAppliesFromThePacketAfter) {
  LinkDirection link(params(k100Mbit), 1);
  for (std::uint64_t i = 0; i < 10; ++i) link.handle_packet(test::packet(i), at(0s));
  DirectionPatch slower;
  slower.rate = BitRate::bits_per_second(10'000'000);  // 1.2 ms per packet
  link.handle_patch(slower, at(500us));  // packets 0-3 done, 4 on the wire
  std::vector<TimePoint> times;
  for (TimePoint t = at(0s); t < at(20ms); t += 10us)
    while (auto p = link.poll_delivery(t)) times.push_back(t);
  ASSERT_EQ(times.size(), 10u);
  EXPECT_EQ(times[4], at(600us));
  EXPECT_EQ(times[5], at(1800us));
  EXPECT_EQ(times[9], at(6600us));
}

TEST(LinkDirection, CodelLeavesShortBurstsAlone) {
  DirectionParams p = params(k100Mbit);
  p.codel.enabled = true;
  LinkDirection link(p, 1);
  // 500 packets at once: 60 ms of queue, drained before an interval (100 ms) is over.
  run(link, steady(at(0s), 0ns, 500));
  EXPECT_EQ(link.counters().drop_codel, 0u);
}

TEST(LinkDirection, CodelDropsUnderAStandingQueue) {
  DirectionParams p = params(k100Mbit);
  p.codel.enabled = true;
  LinkDirection codel(p, 1);
  LinkDirection droptail(params(k100Mbit), 1);
  // 20 % more than the link carries, for two seconds.
  run(codel, steady(at(0s), 100us, 20000));
  run(droptail, steady(at(0s), 100us, 20000));
  EXPECT_GT(codel.counters().drop_codel, 100u);
  EXPECT_EQ(droptail.counters().drop_codel, 0u);
  EXPECT_LT(codel.counters().queue_hwm_packets, droptail.counters().queue_hwm_packets);
}

}  // namespace
}  // namespace netlab
