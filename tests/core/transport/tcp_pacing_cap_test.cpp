// The TCP lanes' pacing cap (`--background` over kernel TCP), driven with
// synthetic tcp_info samples: first hand-made sequences, then a small fluid
// model of a bottleneck in which the kernel sends at the cap and a greedy
// flow comes and goes. Virtual time, deterministic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <vector>

#include "core/transport/tcp_pacing_cap.hpp"

namespace braid::transport {
namespace {

Time ms(double v) { return Time::zero() + Duration::seconds_f(v / 1000); }
double mbit(Rate r) { return r.bits_per_second() / 1e6; }

TcpSample sample(double t_ms, double srtt_ms, uint64_t acked, uint64_t retrans = 0) {
  TcpSample s;
  s.now = ms(t_ms);
  s.srtt = Duration::seconds_f(srtt_ms / 1000);
  s.bytes_acked = acked;
  s.retransmits = retrans;
  s.mss = Bytes(1448);
  return s;
}

// 100 Mbit/s worth of acks every 10 ms.
constexpr uint64_t kPer10ms = 125'000;

TEST(TcpPacingCap, NoCapWhileTheQueueStaysEmpty) {
  TcpPacingCap c;
  for (int i = 0; i < 500; ++i) {
    const auto d = c.on_sample(sample(i * 10.0, 20.0 + (i % 3) * 0.5, kPer10ms * i));
    EXPECT_FALSE(d.cap.has_value()) << "at " << i * 10 << " ms";
    EXPECT_FALSE(d.restart_probe);
  }
  EXPECT_NEAR(mbit(c.acked_rate()), 100, 1);
}

TEST(TcpPacingCap, CapsAtTheAckedRateOnceDelayReachesThreeQuartersOfTheTarget) {
  TcpPacingCap c;
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(c.on_sample(sample(i * 10.0, 20, kPer10ms * i)).cap);
  // The kernel's start-up builds a queue: +8 ms ≥ 0.75 × 10 ms.
  TcpPacingDecision d;
  for (int i = 20; i < 26; ++i) d = c.on_sample(sample(i * 10.0, 28, kPer10ms * i));
  ASSERT_TRUE(d.cap.has_value());
  EXPECT_NEAR(mbit(*d.cap), 100, 10);
  EXPECT_FALSE(c.in_slow_start());
}

TEST(TcpPacingCap, ShrinksWhileDelayIsAboveTargetButNeverBelowTwoPacketsPerRtt) {
  TcpPacingCap c;
  uint64_t acked = 0;
  double t = 0;
  for (; t < 200; t += 10) c.on_sample(sample(t, 20, acked += kPer10ms));
  // Another flow holds the queue at +40 ms; our acks shrink with our cap,
  // and at a few segments per RTT each RTT sample also carries the
  // receiver's delayed ACK (up to the gap between our segments, ≤ 40 ms).
  std::optional<Rate> prev;
  double srtt = 60;
  for (; t < 3000; t += 10) {
    const Rate sent = c.cap() ? *c.cap() : Rate::mbit(100);
    acked += sent.bytes_in(Duration::millis(10)).count();
    srtt = 60 + std::min(1448 / sent.bytes_per_second(), 0.040) * 1000;
    const auto d = c.on_sample(sample(t, srtt, acked));
    if (t < 220) continue;  // the current delay is the min of the last 2 samples
    ASSERT_TRUE(d.cap.has_value()) << "at " << t;
    EXPECT_FALSE(d.restart_probe);
    EXPECT_GE(d.cap->bytes_per_second(), c.floor().bytes_per_second() * 0.999);
    if (prev) {
      EXPECT_LE(d.cap->bytes_per_second(), prev->bytes_per_second() * 1.0001 + 1) << "at " << t;
    }
    prev = d.cap;
  }
  // Floor: 2 × 1448 bytes per srtt (60 ms + ~40 ms of ACK delay) ≈ 0.23 Mbit/s — near zero.
  EXPECT_NEAR(prev->bytes_per_second(), 2 * 1448 / (srtt / 1000), 1);
  EXPECT_LT(mbit(*prev), 0.5);
}

TEST(TcpPacingCap, ARetransmissionHalvesTheCapOncePerRtt) {
  TcpPacingCap c;
  uint64_t acked = 0;
  double t = 0;
  for (; t < 300; t += 10) c.on_sample(sample(t, t < 100 ? 20 : 29, acked += kPer10ms));
  ASSERT_TRUE(c.cap());
  const double before = c.cap()->bytes_per_second();
  c.on_sample(sample(t, 29, acked += kPer10ms, 1));
  const double halved = c.cap()->bytes_per_second();
  EXPECT_NEAR(halved, 0.5 * std::min(before, c.acked_rate().bytes_per_second()), 0.05 * before);
  // More retransmissions within the same RTT (29 ms) do not halve again.
  t += 10;
  c.on_sample(sample(t, 29, acked += kPer10ms, 3));
  EXPECT_GT(c.cap()->bytes_per_second(), 0.9 * halved);
  t += 30;
  c.on_sample(sample(t, 29, acked += kPer10ms, 5));
  EXPECT_LT(c.cap()->bytes_per_second(), 0.6 * halved);
}

TEST(TcpPacingCap, ARetransmissionWithoutAQueueIsNotCongestion) {
  // Random loss on a clean path, or a tail-loss probe that fired early: the
  // kernel answers it; the cap (a delay response) stays off.
  TcpPacingCap c;
  uint64_t acked = 0, retrans = 0;
  for (double t = 0; t < 2000; t += 10) {
    if (static_cast<int>(t) % 100 == 0) ++retrans;
    EXPECT_FALSE(c.on_sample(sample(t, 20 + (static_cast<int>(t) % 30 == 0 ? 1.5 : 0), acked += kPer10ms, retrans)).cap)
        << "at " << t;
  }
  // The same losses with a queue of half the target behind them: a cap, halved.
  const auto d = c.on_sample(sample(2000, 25, acked += kPer10ms, retrans));
  EXPECT_FALSE(d.cap);
  const auto e = c.on_sample(sample(2010, 25, acked += kPer10ms, retrans + 1));
  ASSERT_TRUE(e.cap);
  EXPECT_NEAR(mbit(*e.cap), 50, 5);
}

TEST(TcpPacingCap, IgnoresSamplesThatGoBackInTime) {
  TcpPacingCap c;
  uint64_t acked = 0;
  for (double t = 0; t < 300; t += 10) c.on_sample(sample(t, t < 100 ? 20 : 35, acked += kPer10ms));
  ASSERT_TRUE(c.cap());
  const double cap = c.cap()->bytes_per_second();
  const auto d = c.on_sample(sample(100, 90, acked, 50));
  ASSERT_TRUE(d.cap);
  EXPECT_EQ(d.cap->bytes_per_second(), cap);
}

// ---- a fluid bottleneck ------------------------------------------------------
//
// One link (rate C, base RTT R, a drop-tail queue of `queue_limit` seconds).
// Our kernel TCP sends at the cap (or, uncapped, at 1.1 × C: a greedy
// start-up); a competing greedy flow, while present, takes what we leave and
// pushes the queue up to its limit (a loss-based TCP's standing queue). The
// kernel's srtt follows R + queue/C + the receiver's delayed ACK (one
// segment gap, ≤ 40 ms: what kept the cap at its floor on netlab before the
// controller allowed for it) with a lag (EWMA), acks return after R.
struct FluidRun {
  double link_mbit = 100, base_rtt_ms = 20, queue_limit_ms = 80;
  double other_from_s = 3, other_to_s = 8, end_s = 11;

  struct Point {
    double t, ours_mbit, other_mbit, queue_ms, cap_mbit;
    bool capped, restart;
  };
  std::vector<Point> points;  // every 10 ms

  void run() {
    TcpPacingCap cap;
    const double C = link_mbit * 1e6 / 8, dt = 0.001;
    double queue = 0, srtt = base_rtt_ms / 1000, delivered = 0;
    std::deque<std::pair<double, double>> in_flight;  // (ack time, cumulative delivered)
    double acked = 0;
    std::optional<Rate> limit;
    double window_ours = 0, window_other = 0;
    for (int step = 0; step * dt < end_s; ++step) {
      const double t = step * dt;
      const bool other = t >= other_from_s && t < other_to_s;
      const double ours_in = limit ? limit->bytes_per_second() : 1.1 * C;
      // The competitor fills what we leave and grows the queue to its limit.
      double other_in = 0;
      if (other) other_in = std::max(0.0, C - ours_in) + (queue < queue_limit_ms / 1000 * C ? 0.3 * C : 0);
      const double offered = ours_in + other_in;
      // Drop-tail: what does not fit is lost (our share only matters here).
      const double room = queue_limit_ms / 1000 * C - queue;
      const double accepted = std::min(offered * dt, room + C * dt);
      const double ours_share = offered > 0 ? ours_in / offered : 0;
      const double served = std::min(queue + accepted, C * dt);
      queue = queue + accepted - served;
      delivered += served * ours_share;
      window_ours += served * ours_share;
      window_other += served * (1 - ours_share);
      in_flight.push_back({t + base_rtt_ms / 1000, delivered});
      while (!in_flight.empty() && in_flight.front().first <= t) {
        acked = in_flight.front().second;
        in_flight.pop_front();
      }
      // The kernel's smoothed RTT: a lagging view of base + queueing delay
      // + the receiver's delayed ACK of lone segments (the gap between our
      // segments, at most 40 ms), which matters at a few segments per RTT.
      const double ack_wait = std::min(1448 / std::max(ours_in, 1.0), 0.040);
      srtt += (base_rtt_ms / 1000 + queue / C + ack_wait - srtt) * 0.1;
      if (step % 10 == 9) {
        TcpSample s;
        s.now = Time::zero() + Duration::seconds_f(t);
        s.srtt = Duration::seconds_f(srtt);
        s.bytes_acked = static_cast<uint64_t>(acked);
        s.mss = Bytes(1448);
        const auto d = cap.on_sample(s);
        limit = d.cap;
        if (d.cap) {
          EXPECT_GE(d.cap->bytes_per_second(), cap.floor().bytes_per_second() * 0.999);
        }
        points.push_back({t, window_ours * 8 / 0.01 / 1e6, window_other * 8 / 0.01 / 1e6, queue / C * 1000,
                          d.cap ? mbit(*d.cap) : 0, d.cap.has_value(), d.restart_probe});
        window_ours = window_other = 0;
      }
    }
    if (std::getenv("BRAID_TEST_TRACE")) print();
  }
  void print() const {
    for (const auto& p : points)
      std::printf("%6.2f ours %7.2f other %7.2f queue %6.1f ms cap %8.3f%s%s\n", p.t, p.ours_mbit, p.other_mbit,
                  p.queue_ms, p.cap_mbit, p.capped ? "" : " (none)", p.restart ? " RESTART" : "");
  }
  double mean(double a, double b, double Point::*field) const {
    double sum = 0;
    int n = 0;
    for (const auto& p : points)
      if (p.t >= a && p.t < b) sum += p.*field, ++n;
    return n ? sum / n : 0;
  }
  double max(double a, double b, double Point::*field) const {
    double m = 0;
    for (const auto& p : points)
      if (p.t >= a && p.t < b) m = std::max(m, p.*field);
    return m;
  }
  int restarts(double a, double b) const {
    int n = 0;
    for (const auto& p : points) n += p.t >= a && p.t < b && p.restart;
    return n;
  }
};

TEST(TcpPacingCapFluid, AloneItFillsTheLinkAndHoldsTheQueueNearTheTarget) {
  FluidRun r;
  r.other_from_s = r.other_to_s = 100;
  r.end_s = 4;
  r.run();
  EXPECT_GE(r.mean(1, 4, &FluidRun::Point::ours_mbit), 0.9 * r.link_mbit);
  EXPECT_LE(r.mean(1, 4, &FluidRun::Point::queue_ms), 15);
  EXPECT_LE(r.max(2, 4, &FluidRun::Point::queue_ms), 25);
}

TEST(TcpPacingCapFluid, YieldsToAGreedyFlowAndTakesTheLinkBackWithinTwoSeconds) {
  FluidRun r;
  r.run();
  const double C = r.link_mbit;
  EXPECT_GE(r.mean(1, 3, &FluidRun::Point::ours_mbit), 0.9 * C);      // alone: full rate
  EXPECT_GE(r.mean(4, 5, &FluidRun::Point::other_mbit), 0.8 * C);     // the newcomer has ≥ 0.8 within 2 s
  EXPECT_LE(r.mean(4, 8, &FluidRun::Point::ours_mbit), 0.02 * C);     // near zero meanwhile
  EXPECT_LE(r.max(4.5, 8, &FluidRun::Point::cap_mbit), 0.02 * C);
  EXPECT_EQ(r.restarts(3, 8), 0);                                     // no false "the path is free"
  EXPECT_EQ(r.restarts(8, 10), 1);                                    // one restart after it left
  EXPECT_GE(r.mean(9, 10, &FluidRun::Point::ours_mbit), 0.9 * C);     // back ≥ 0.9 within 2 s
}

TEST(TcpPacingCapFluid, YieldsOnALongPathToo) {
  FluidRun r;
  r.link_mbit = 200;
  r.base_rtt_ms = 60;
  r.queue_limit_ms = 100;
  r.run();
  const double C = r.link_mbit;
  EXPECT_GE(r.mean(4, 5, &FluidRun::Point::other_mbit), 0.8 * C);
  EXPECT_LE(r.mean(4.5, 8, &FluidRun::Point::ours_mbit), 0.02 * C);
  // Three times the RTT: the 8 quiet RTTs and the slow start take longer.
  EXPECT_GE(r.mean(9.5, 10, &FluidRun::Point::ours_mbit), 0.8 * C);
  EXPECT_GE(r.mean(10, 10.5, &FluidRun::Point::ours_mbit), 0.9 * C);
}

}  // namespace
}  // namespace braid::transport
