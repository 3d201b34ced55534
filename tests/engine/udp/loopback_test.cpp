// Real UDP lanes over loopback (127.0.0.1 / ::1): whole transfers arrive
// identical, with and without injected loss, with and without GSO/GRO.
#include <gtest/gtest.h>

#include <cerrno>

#include "loopback_pair.hpp"

namespace braid::udp::test {
namespace {

constexpr size_t kMiB = 1 << 20;

void expect_counters_sane(const UdpLaneCounters& s, const UdpLaneCounters& r) {
  EXPECT_GT(s.packets_sent, 0u);
  EXPECT_GT(s.srtt_ms, 0.0);
  EXPECT_GT(s.min_rtt_ms, 0.0);
  EXPECT_LE(s.min_rtt_ms, s.srtt_ms * 4 + 1);
  EXPECT_GT(s.rate_bytes_per_sec, 0.0);
  EXPECT_GT(r.packets_received, 0u);
  EXPECT_EQ(s.protocol_errors, 0u);
  EXPECT_EQ(r.protocol_errors, 0u);
  EXPECT_EQ(r.rejected_total(), 0u);
  EXPECT_EQ(s.rejected_total(), 0u);
}

TEST(Loopback, SixtyFourMiBArriveIdentical) {
  LoopbackPair pair(64 * kMiB, kMiB);
  ASSERT_TRUE(pair.start(base_config("127.0.0.1:0"), base_config("127.0.0.1:0"))) << pair.error();
  pair.send_all();
  ASSERT_TRUE(pair.wait_acked(pair.piece_count())) << "acked " << pair.acked().size();
  const double secs = pair.seconds_to_last_ack();
  const auto c = pair.stop();
  expect_counters_sane(c.send, c.recv);
  EXPECT_EQ(c.send.pieces_acked, pair.piece_count());
  EXPECT_GE(c.send.data_bytes_acked, 64 * kMiB);
  EXPECT_TRUE(pair.identical());
  EXPECT_EQ(pair.ack_events(), pair.piece_count());  // each piece acked exactly once
  EXPECT_EQ(pair.out_of_range(), 0u);
  RecordProperty("gbit_per_s", std::to_string(64.0 * kMiB * 8 / secs / 1e9));
}

// Loss injected in the sender's socket layer (seeded): every byte still
// arrives, and only what was lost goes out again.
void lossy_transfer(double drop, uint64_t seed) {
  LoopbackPair pair(64 * kMiB, kMiB);
  UdpLaneConfig s = base_config("127.0.0.1:0");
  s.fault.drop_probability = drop;
  s.fault.seed = seed;
  ASSERT_TRUE(pair.start(s, base_config("127.0.0.1:0"))) << pair.error();
  const uint16_t recv_port = pair.receiver().local_address().port();
  const uint64_t drops_before = kernel_drops(recv_port);
  pair.send_all();
  ASSERT_TRUE(pair.wait_acked(pair.piece_count())) << "acked " << pair.acked().size();
  const uint64_t kernel_lost = kernel_drops(recv_port) - drops_before;
  const UdpLaneCounters c = pair.stop().send;
  EXPECT_TRUE(pair.identical());
  EXPECT_EQ(pair.ack_events(), pair.piece_count());
  const uint64_t injected = c.socket.injected_drop_bytes;
  // The drops really happened, at about the asked rate.
  EXPECT_GT(c.socket.injected_drops, 0u);
  EXPECT_NEAR(static_cast<double>(c.socket.injected_drops) / static_cast<double>(c.packets_sent), drop, drop * 0.3);
  // Lost on the path = injected + any the kernel dropped (busy CPU); the
  // dropped bytes are whole datagrams (header and tag included), a few
  // percent more than their payload.
  const double lost_bytes = static_cast<double>(injected) + static_cast<double>(kernel_lost) * s.packet_size;
  EXPECT_GT(c.data_bytes_retransmitted, 0u);
  ::testing::Test::RecordProperty("resent_over_lost", std::to_string(static_cast<double>(c.data_bytes_retransmitted) / lost_bytes));
  EXPECT_LE(static_cast<double>(c.data_bytes_retransmitted), 1.2 * lost_bytes)
      << "resent " << c.data_bytes_retransmitted << " B, injected drops " << injected << " B, kernel drops "
      << kernel_lost << " datagrams";
  EXPECT_GT(c.packets_lost, 0u);
  EXPECT_GT(c.packets_retransmitted, 0u);
}

TEST(Loopback, OnePercentLossArrivesIdenticalResendingOnlyTheLoss) { lossy_transfer(0.01, 11); }
TEST(Loopback, FivePercentLossArrivesIdenticalResendingOnlyTheLoss) { lossy_transfer(0.05, 5); }

TEST(Loopback, WorksWithoutGsoAndGro) {
  LoopbackPair pair(16 * kMiB, kMiB);
  UdpLaneConfig s = base_config("127.0.0.1:0");
  UdpLaneConfig r = base_config("127.0.0.1:0");
  s.socket.gso = r.socket.gso = false;
  s.socket.gro = r.socket.gro = false;
  ASSERT_TRUE(pair.start(s, r)) << pair.error();
  pair.send_all();
  ASSERT_TRUE(pair.wait_acked(pair.piece_count()));
  pair.stop();
  EXPECT_TRUE(pair.identical());
}

// GSO was there when the socket opened, but the kernel refuses it at send
// time (EIO: a route without checksum offload): the sending lane turns it
// off once and sends one datagram per message; nothing is lost to it.
TEST(Loopback, FallsBackWhenTheKernelRefusesGsoAtSendTime) {
  LoopbackPair pair(16 * kMiB, kMiB);
  UdpLaneConfig s = base_config("127.0.0.1:0");
  s.fault.refuse_gso = EIO;
  ASSERT_TRUE(pair.start(s, base_config("127.0.0.1:0"))) << pair.error();
  pair.send_all();
  ASSERT_TRUE(pair.wait_acked(pair.piece_count()));
  const auto c = pair.stop();
  EXPECT_TRUE(pair.identical());
  EXPECT_FALSE(c.send.gso);
  EXPECT_EQ(c.send.socket.gso_fallbacks, 1u);
  EXPECT_EQ(c.send.socket.gso_messages, 0u);
  EXPECT_GE(c.send.socket.datagrams_sent, c.send.packets_sent);
  // The switch itself loses nothing; a shared host's stall may still time
  // a few packets out (this failed once in a full run): far below a resend
  // of a piece, let alone of the file.
  EXPECT_LT(c.send.data_bytes_retransmitted, kMiB);
}

// A sender with GSO and a receiver whose kernel has no GRO (UDP_GRO refused
// at open): the kernel cuts each GSO message into datagrams before the
// receiving socket, which takes them one per buffer.
TEST(Loopback, GsoSenderToAReceiverWithoutGro) {
  LoopbackPair pair(16 * kMiB, kMiB);
  UdpLaneConfig r = base_config("127.0.0.1:0");
  r.socket.gro = false;
  ASSERT_TRUE(pair.start(base_config("127.0.0.1:0"), r)) << pair.error();
  pair.send_all();
  ASSERT_TRUE(pair.wait_acked(pair.piece_count()));
  const auto c = pair.stop();
  EXPECT_TRUE(pair.identical());
  EXPECT_FALSE(c.recv.gro);
  EXPECT_EQ(c.recv.socket.gro_messages, 0u);
  if (c.send.gso) {
    EXPECT_GT(c.send.socket.gso_messages, 0u);
  }
}

// Without the fault the same lane does use GSO and GRO on loopback (the
// kernel here has both), so FallsBackWhenTheKernelRefusesGsoAtSendTime
// falls back from a real GSO path.
TEST(Loopback, UsesGsoAndGroWhereTheKernelHasThem) {
  LoopbackPair pair(16 * kMiB, kMiB);
  ASSERT_TRUE(pair.start(base_config("127.0.0.1:0"), base_config("127.0.0.1:0"))) << pair.error();
  pair.send_all();
  ASSERT_TRUE(pair.wait_acked(pair.piece_count()));
  const auto c = pair.stop();
  EXPECT_TRUE(pair.identical());
  if (!c.send.gso) GTEST_SKIP() << "this kernel refuses UDP_SEGMENT";
  EXPECT_EQ(c.send.socket.gso_fallbacks, 0u);
  EXPECT_GT(c.send.socket.gso_messages, 0u);
  EXPECT_LT(c.send.socket.send_calls, c.send.socket.datagrams_sent / 4);
  if (c.recv.gro) {
    EXPECT_GT(c.recv.socket.gro_messages, 0u);
  }
}

TEST(Loopback, Ipv6JumboPackets) {
  LoopbackPair pair(16 * kMiB, kMiB);
  UdpLaneConfig s = base_config("[::1]:0");
  UdpLaneConfig r = base_config("[::1]:0");
  s.packet_size = r.packet_size = 9000;
  if (!pair.start(s, r)) GTEST_SKIP() << "no IPv6 loopback here: " << pair.error();
  pair.send_all();
  ASSERT_TRUE(pair.wait_acked(pair.piece_count()));
  pair.stop();
  EXPECT_TRUE(pair.identical());
}

TEST(Loopback, SmallestPacketsAndOddPieceSizes) {
  LoopbackPair pair(3 * kMiB + 12345, 300'001);
  UdpLaneConfig s = base_config("127.0.0.1:0");
  UdpLaneConfig r = base_config("127.0.0.1:0");
  s.packet_size = r.packet_size = 1200;
  ASSERT_TRUE(pair.start(s, r)) << pair.error();
  pair.send_all();
  ASSERT_TRUE(pair.wait_acked(pair.piece_count()));
  pair.stop();
  EXPECT_TRUE(pair.identical());
}

TEST(Loopback, RejectsBadConfig) {
  LoopbackPair pair(kMiB, kMiB);
  UdpLaneConfig s = base_config("127.0.0.1:0");
  s.packet_size = 900;
  EXPECT_FALSE(pair.start(s, base_config("127.0.0.1:0")));
  EXPECT_NE(pair.error().find("packet size"), std::string::npos) << pair.error();
  LoopbackPair pair2(kMiB, kMiB);
  UdpLaneConfig s2 = base_config("127.0.0.1:0");
  s2.cc = "cubic-ish";
  EXPECT_FALSE(pair2.start(s2, base_config("127.0.0.1:0")));
  EXPECT_NE(pair2.error().find("cubic-ish"), std::string::npos) << pair2.error();
}

}  // namespace
}  // namespace braid::udp::test
