// The lane's contract with the engine: cancel, close reasons, and the
// --rate-limit on real time (tolerant: a shared machine's scheduler is not
// a virtual clock; the exact check is CoreHooks.RateCapHoldsTheWireRate).
#include <gtest/gtest.h>

#include "loopback_pair.hpp"

namespace braid::udp::test {
namespace {

constexpr size_t kMiB = 1 << 20;

TEST(LaneContract, CancelledPieceIsNeverAckedOthersAre) {
  LoopbackPair pair(16 * kMiB, kMiB);
  UdpLaneConfig s = base_config("127.0.0.1:0");
  s.rate_limit = Rate::mbit(200);  // slow enough that the cancel lands while the piece is queued
  ASSERT_TRUE(pair.start(s, base_config("127.0.0.1:0"))) << pair.error();
  pair.send_all();
  pair.sender().cancel_piece(15);
  ASSERT_TRUE(pair.wait_acked(15));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto acked = pair.acked();
  EXPECT_EQ(acked.size(), 15u);
  EXPECT_EQ(acked.count(15), 0u);
  // The lane is still fine: send the piece again, it arrives.
  pair.send_piece(15);
  ASSERT_TRUE(pair.wait_acked(16));
  pair.stop();
  EXPECT_TRUE(pair.identical());
}

TEST(LaneContract, PeerGoneClosesTheLaneWithAReason) {
  LoopbackPair pair(64 * kMiB, kMiB);
  UdpLaneConfig s = base_config("127.0.0.1:0");
  s.rate_limit = Rate::mbit(200);
  s.idle_timeout = Duration::seconds(2);
  ASSERT_TRUE(pair.start(s, base_config("127.0.0.1:0"))) << pair.error();
  pair.send_all();
  ASSERT_TRUE(pair.wait_acked(2));
  pair.receiver().close("test: receiver gone");
  ASSERT_TRUE(pair.wait_sender_closed(std::chrono::seconds(10)));
  const auto reasons = pair.closed_reasons();
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_EQ(reasons[0], "test: receiver gone");
  // Loopback reports the closed port at once (ICMP); elsewhere the idle timeout fires.
  EXPECT_TRUE(reasons[1].find("port is closed") != std::string::npos || reasons[1].find("silent") != std::string::npos)
      << reasons[1];
  EXPECT_LT(pair.acked().size(), pair.piece_count());
}

TEST(LaneContract, CloseIsIdempotentAndReportedOnce) {
  LoopbackPair pair(kMiB, kMiB);
  ASSERT_TRUE(pair.start(base_config("127.0.0.1:0"), base_config("127.0.0.1:0"))) << pair.error();
  pair.sender().close("first");
  pair.sender().close("second");
  ASSERT_TRUE(pair.wait_sender_closed(std::chrono::seconds(5)));
  pair.stop();
  const auto reasons = pair.closed_reasons();
  ASSERT_EQ(reasons.size(), 2u);  // one per lane
  EXPECT_EQ(reasons[0], "first");
}

TEST(LaneContract, RateLimitHonouredOnRealTime) {
  // 300 Mbit/s for ~2 s of data. The cap limits wire bytes; file data is
  // ~97 % of them at 1472-byte packets.
  const Rate cap = Rate::mbit(300);
  const size_t bytes = static_cast<size_t>(cap.bytes_per_second() * 2.0 * 0.97);
  LoopbackPair pair(bytes, kMiB);
  UdpLaneConfig s = base_config("127.0.0.1:0");
  s.rate_limit = cap;
  ASSERT_TRUE(pair.start(s, base_config("127.0.0.1:0"))) << pair.error();
  pair.send_all();
  ASSERT_TRUE(pair.wait_acked(pair.piece_count()));
  const double secs = pair.seconds_to_last_ack();
  const auto c = pair.stop();
  const double wire_rate = static_cast<double>(c.send.wire_bytes_sent) / secs;
  RecordProperty("wire_rate_over_cap", std::to_string(wire_rate / cap.bytes_per_second()));
  // Never faster than the cap (plus the one-quantum start); slower only if
  // the machine is too busy to keep up, which we tolerate to -15 %.
  EXPECT_LE(wire_rate, cap.bytes_per_second() * 1.05);
  EXPECT_GE(wire_rate, cap.bytes_per_second() * 0.85);
  EXPECT_LE(c.send.rate_bytes_per_sec, cap.bytes_per_second());
  EXPECT_TRUE(pair.identical());
}

}  // namespace
}  // namespace braid::udp::test
