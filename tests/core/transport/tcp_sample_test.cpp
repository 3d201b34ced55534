// What braid reads from a TCP lane's kernel state: the RTT sample behind
// the kernel's smoothed srtt (latest_rtt_sample), and how the group cap
// keeps a wrong one out of a lane's base.
#include <gtest/gtest.h>

#include <vector>

#include "core/transport/tcp_group_cap.hpp"
#include "core/transport/tcp_sample.hpp"

namespace braid::transport {
namespace {

constexpr Bytes kMss{1448};

// The kernel's srtt after `n` RTT samples of `rtt` (RFC 6298: 1/8 each).
Duration smoothed(Duration srtt, Duration rtt, int n) {
  for (int i = 0; i < n; ++i) srtt = srtt + (rtt - srtt) / 8.0;
  return srtt;
}

TEST(LatestRttSample, AcksThatSackBeyondAHoleCountAsSamplesEach) {
  // Four ACKs, each SACKing a segment beyond a hole and each an RTT sample
  // of 40.2 ms; the cumulative ACK moved by one segment.
  TcpSample prev{Time::zero(), Duration::micros(43'640), 1'000'000, 0, 500, 700, kMss};
  TcpSample cur = prev;
  cur.now = Time::zero() + Duration::millis(10);
  cur.srtt = smoothed(prev.srtt, Duration::micros(40'200), 4);
  cur.bytes_acked += kMss.count();
  cur.segs_in += 4;
  cur.delivered += 4;
  const Duration got = latest_rtt_sample(prev, cur, kMss);
  EXPECT_NEAR(got.to_seconds() * 1e3, 40.2, 0.05);

  // Without the delivered count the cumulative ACK is all there is to go
  // by: one sample, the srtt's move magnified eightfold — far below the path.
  prev.delivered = cur.delivered = 0;
  EXPECT_LT(latest_rtt_sample(prev, cur, kMss).to_seconds() * 1e3, 35.0);
}

TEST(LatestRttSample, OneAckPerSegmentPairAtFullRateIsTheSrttItself) {
  TcpSample prev{Time::zero(), Duration::micros(20'000), 0, 0, 100, 100, kMss};
  TcpSample cur = prev;
  cur.now = Time::zero() + Duration::millis(10);
  cur.srtt = smoothed(prev.srtt, Duration::micros(25'000), 40);
  cur.bytes_acked += 80 * kMss.count();
  cur.segs_in += 40;
  cur.delivered += 80;
  EXPECT_NEAR(latest_rtt_sample(prev, cur, kMss).to_seconds() * 1e3, 25.0, 0.05);
}

// Two lanes on a 40 ms path with no queue; one look of lane 1 is a
// de-smoothing gone wrong (a stretch of SACKs and a kernel too old to count
// them). The group's base is still the path's: the queue reads what the
// srtt says, not the error, for the rest of the transfer.
TEST(TcpGroupCap, AWrongLowSampleNeverBecomesALanesBase) {
  TcpGroupCap cap;
  const Duration min_rtt = Duration::millis(40);
  uint64_t acked[2] = {0, 0};
  uint32_t acks[2] = {1, 1};
  Duration srtt[2] = {Duration::micros(40'300), Duration::micros(40'300)};
  const int per_look = 7;  // ~8 Mbit/s a lane, a look every 10 ms
  for (int step = 0; step < 300; ++step) {
    const Time now = Time::zero() + Duration::millis(10 * (step + 1));
    std::vector<TcpLaneSample> lanes;
    for (int i = 0; i < 2; ++i) {
      int segments = per_look, ack_count = per_look / 2;
      srtt[i] = Duration::micros(40'300);
      if (i == 1 && step == 100) srtt[i] = Duration::micros(43'640);
      if (i == 1 && step == 101) {
        srtt[i] = Duration::micros(42'410);  // four SACKs of 40.2 ms, one segment acked
        segments = 1;
        ack_count = 4;
      }
      acked[i] += segments * kMss.count();
      acks[i] += ack_count;
      TcpLaneSample s;
      s.lane = i;
      s.tcp = {now, srtt[i], acked[i], 0, acks[i], 0, kMss};
      s.min_rtt = min_rtt;
      s.pacing = Rate::bytes_per_sec(1e6);
      lanes.push_back(s);
    }
    cap.on_samples(now, lanes);
  }
  EXPECT_LT(cap.queuing_delay().to_seconds() * 1e3, 1.0);
}

}  // namespace
}  // namespace braid::transport
