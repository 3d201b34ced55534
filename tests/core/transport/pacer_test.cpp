// Pacing accuracy in virtual time: over one second the bytes sent match the
// rate within 1 %, and no burst exceeds the quantum.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/transport/lane_sender.hpp"
#include "core/transport/pacer.hpp"

namespace braid::transport {
namespace {

/// A controller that only sets a rate (window unlimited): isolates the pacer.
class FixedRate final : public CongestionController {
 public:
  explicit FixedRate(Rate r) : rate_(r) {}
  std::string_view id() const override { return "fixed"; }
  void on_packet_sent(Time, uint64_t, Bytes, Bytes) override {}
  void on_congestion_event(const CongestionEvent&) override {}
  Bytes congestion_window() const override { return Bytes::gib(1); }
  Rate pacing_rate() const override { return rate_; }

 private:
  Rate rate_;
};

struct BurstCheck {
  // Largest excess of bytes sent over rate × elapsed, over every window ending
  // at each packet (a running maximum-subarray).
  double worst = 0;
  double run = 0;
  Time last;
  bool first = true;
  void add(Time t, double size, Rate rate) {
    run = first ? size : std::max(size, run + size - rate.bytes_per_second() * (t - last).to_seconds());
    first = false;
    last = t;
    worst = std::max(worst, run);
  }
};

class PacerAccuracy : public ::testing::TestWithParam<std::pair<double, size_t>> {};

TEST_P(PacerAccuracy, MeetsRateWithinOnePercentWithoutBursts) {
  const Rate rate = Rate::mbit(GetParam().first);
  const Bytes size(GetParam().second);
  Pacer pacer(size);
  Time now = Time::zero();
  const Time end = Time::zero() + Duration::seconds(1);
  uint64_t sent = 0;
  BurstCheck burst;
  while (true) {
    now = std::max(now, pacer.next_send_time(now, rate, size));
    if (now >= end) break;
    pacer.on_packet_sent(now, rate, size);
    sent += size.count();
    burst.add(now, size.as_double(), rate);
  }
  const double expected = rate.bytes_per_second();
  EXPECT_NEAR(static_cast<double>(sent), expected, expected * 0.01);
  EXPECT_LE(burst.worst, pacer.quantum(rate).as_double() + 1);
}

INSTANTIATE_TEST_SUITE_P(Rates, PacerAccuracy,
                         ::testing::Values(std::pair{50.0, size_t{1200}}, std::pair{200.0, size_t{1200}},
                                           std::pair{1000.0, size_t{9000}}, std::pair{2.0, size_t{1200}}));

TEST(PacerWake, BatchedWakesKeepTheRateAndTheBurstBound) {
  // wake_time = 0.5 ms (~8.5 packets at 200 Mbit/s): far fewer wake-ups, the
  // same rate, bursts still within the quantum.
  const Rate rate = Rate::mbit(200);
  const Bytes size(1472);
  PacerConfig cfg;
  cfg.burst_time = Duration::millis(1);
  cfg.wake_time = Duration::micros(500);
  Pacer pacer(size, cfg);
  Time now = Time::zero();
  const Time end = Time::zero() + Duration::seconds(1);
  uint64_t sent = 0, wakes = 0;
  BurstCheck burst;
  Time last_wake = Time::never();
  while (true) {
    now = std::max(now, pacer.next_send_time(now, rate, size));
    if (now >= end) break;
    if (now != last_wake) ++wakes;
    last_wake = now;
    pacer.on_packet_sent(now, rate, size);
    sent += size.count();
    burst.add(now, size.as_double(), rate);
  }
  const double expected = rate.bytes_per_second();
  EXPECT_NEAR(static_cast<double>(sent), expected, expected * 0.01);
  const double packets = static_cast<double>(sent) / size.as_double();
  EXPECT_LT(static_cast<double>(wakes), packets / 7.0);  // one wake per packet would be ~17 000
  EXPECT_LE(burst.worst, pacer.quantum(rate).as_double() + 1);
}

TEST(PacedSender, LaneSenderHoldsThePacingRateOverOneSecond) {
  SenderConfig cfg;
  cfg.initial_max_data = Bytes::gib(1);
  const Rate rate = Rate::mbit(100);
  LaneSender sender(cfg, std::make_unique<FixedRate>(rate));
  for (uint64_t p = 0; p < 20; ++p) sender.enqueue({p, 0, 1u << 20});
  std::vector<uint8_t> buf(kMaxDatagramSize);
  Time now = Time::zero();
  const Time end = Time::zero() + Duration::seconds(1);
  uint64_t bytes = 0;
  BurstCheck burst;
  uint64_t quantum = 0;
  while (now < end) {
    while (auto t = sender.poll_transmit(now, buf)) {
      bytes += t->size + kAeadTagSize;
      burst.add(now, static_cast<double>(t->size + kAeadTagSize), rate);
    }
    quantum = Pacer(cfg.max_datagram_size).quantum(rate).count();
    // Nothing is ever acked here, so skip the PTO and only follow the pacer.
    now = sender.controller().next_send_time(now, cfg.max_datagram_size);
  }
  EXPECT_NEAR(static_cast<double>(bytes), rate.bytes_per_second(), rate.bytes_per_second() * 0.01);
  EXPECT_LE(burst.worst, static_cast<double>(quantum) + 1);
}

}  // namespace
}  // namespace braid::transport
