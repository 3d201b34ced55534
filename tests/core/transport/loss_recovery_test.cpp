// Reliability unit tests: two real state machines back to back in virtual
// time, with losses and reordering injected as data.
#include <gtest/gtest.h>

#include "lane_pair.hpp"

namespace braid::transport::testing {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(LossRecovery, CleanTransferDeliversEverythingOnce) {
  LanePair lane;
  lane.enqueue_bytes(2 * kMiB);
  ASSERT_TRUE(lane.run_until_acked(at_ms(5000)));
  EXPECT_EQ(lane.sink.fresh, 2 * kMiB);
  EXPECT_EQ(lane.sender->stats().packets_lost, 0u);
  EXPECT_EQ(lane.sender->stats().data_bytes_retransmitted, 0u);
  EXPECT_EQ(lane.sender->stats().data_bytes_sent, 2 * kMiB);
  // RFC 9002 RTT: the path is 2 × 10 ms; srtt stays within ack-delay noise.
  EXPECT_GE(lane.sender->rtt().min(), Duration::millis(20));
  EXPECT_LT(lane.sender->rtt().min(), Duration::millis(22));
}

TEST(LossRecovery, TailLossIsRecoveredByProbeTimeout) {
  LanePair lane;
  lane.enqueue_bytes(20 * 1000);  // ~17 packets, then nothing more to send
  // Drop the last two packets of the transfer (packet 17 is the last one).
  lane.drop_data = [](uint64_t pn) { return pn == 16 || pn == 17; };
  ASSERT_TRUE(lane.run_until_acked(at_ms(5000)));
  EXPECT_EQ(lane.sink.fresh, 20u * 1000);
  EXPECT_GE(lane.sender->stats().pto_count, 1u);
  // Only the two lost packets' data went out again (~2 × 1150 bytes), once.
  EXPECT_GT(lane.sender->stats().data_bytes_retransmitted, 0u);
  EXPECT_LE(lane.sender->stats().data_bytes_retransmitted, 2u * 1200);
}

TEST(LossRecovery, BurstLossResendsExactlyTheLostData) {
  LanePair lane;
  lane.enqueue_bytes(4 * kMiB);
  lane.drop_data = [](uint64_t pn) { return pn >= 500 && pn < 540; };
  ASSERT_TRUE(lane.run_until_acked(at_ms(20000)));
  EXPECT_EQ(lane.sink.fresh, 4 * kMiB);
  EXPECT_EQ(lane.sender->stats().packets_lost, 40u);
  // Nothing arrived twice, and what was resent is the 40 packets' payload
  // (~1150 bytes each), not more.
  EXPECT_EQ(lane.receiver->stats().duplicate_packets, 0u);
  EXPECT_GE(lane.sender->stats().data_bytes_retransmitted, 40u * 1100);
  EXPECT_LE(lane.sender->stats().data_bytes_retransmitted, 40u * 1200);
}

TEST(LossRecovery, ReorderingWithinThresholdIsNotLoss) {
  LanePair lane;
  lane.enqueue_bytes(2 * kMiB);
  // Every 10th packet is overtaken by the next 2 (below RFC 9002's packet
  // threshold of 3, and far within 9/8 RTT): reordering, not loss.
  lane.overtaken_by = [](uint64_t pn) { return pn % 10 == 3 && pn < 1500 ? 2 : 0; };
  ASSERT_TRUE(lane.run_until_acked(at_ms(5000)));
  EXPECT_EQ(lane.sink.fresh, 2 * kMiB);
  EXPECT_EQ(lane.sender->stats().packets_lost, 0u);
  EXPECT_EQ(lane.sender->stats().data_bytes_retransmitted, 0u);
  EXPECT_GT(lane.receiver->received().ranges().size(), 0u);
}

TEST(LossRecovery, ReorderingBeyondThresholdIsDeclaredLostButDeliveredOnce) {
  LanePair lane;
  lane.enqueue_bytes(kMiB);
  // One packet 30 ms late: overtaken by many later packets, so it is
  // (correctly, per RFC 9002) declared lost and resent; the copy is harmless.
  lane.extra_delay = [](uint64_t pn) { return pn == 100 ? Duration::millis(30) : Duration::zero(); };
  ASSERT_TRUE(lane.run_until_acked(at_ms(5000)));
  EXPECT_EQ(lane.sink.fresh, kMiB);
  EXPECT_EQ(lane.sender->stats().packets_lost, 1u);
}

TEST(Acks, ReceiverAcksRangesAroundHoles) {
  LanePair lane;
  lane.enqueue_bytes(30 * 1000);
  lane.drop_data = [](uint64_t pn) { return pn == 3 || pn == 7 || pn == 8; };
  lane.run_until(at_ms(15));  // first flight arrived, no retransmissions yet
  const auto& ranges = lane.receiver->received().ranges();
  ASSERT_GE(ranges.size(), 3u);
  EXPECT_EQ(ranges[0], (Range{0, 2}));
  EXPECT_EQ(ranges[1], (Range{4, 6}));
  EXPECT_EQ(ranges[2].lo, 9u);
  // The last feedback packet carries those ranges, highest first.
  ASSERT_FALSE(lane.feedback_log.empty());
  ByteReader r(lane.feedback_log.back());
  PacketHeader h;
  ASSERT_EQ(decode_header(r, h), TransportError::ok);
  EXPECT_EQ(h.kind, PacketKind::feedback);
  std::vector<Range> acked;
  while (!r.empty()) {
    Frame f;
    ASSERT_EQ(decode_frame(r, f), TransportError::ok);
    if (f.type == FrameType::ack) f.ack.for_each_range([&](Range x) { acked.push_back(x); });
  }
  ASSERT_GE(acked.size(), 3u);
  EXPECT_EQ(acked[acked.size() - 1], (Range{0, 2}));
  EXPECT_EQ(acked[acked.size() - 2], (Range{4, 6}));
}

TEST(Acks, ReplayOfAnOldAckIsHarmless) {
  LanePair lane;
  lane.enqueue_bytes(kMiB);
  lane.run_until(at_ms(100));
  ASSERT_GE(lane.feedback_log.size(), 2u);
  const auto old_ack = lane.feedback_log.front();
  const SenderStats before = lane.sender->stats();
  const Bytes in_flight = lane.sender->bytes_in_flight();
  const Duration srtt = lane.sender->rtt().smoothed();
  EXPECT_EQ(lane.inject_feedback(old_ack), TransportError::ok);
  EXPECT_EQ(lane.inject_feedback(old_ack), TransportError::ok);
  EXPECT_EQ(lane.sender->stats().packets_acked, before.packets_acked);
  EXPECT_EQ(lane.sender->stats().packets_lost, before.packets_lost);
  EXPECT_EQ(lane.sender->stats().stale_acks, before.stale_acks + 2);
  EXPECT_EQ(lane.sender->bytes_in_flight(), in_flight);
  EXPECT_EQ(lane.sender->rtt().smoothed(), srtt);
  ASSERT_TRUE(lane.run_until_acked(at_ms(5000)));
  EXPECT_EQ(lane.sink.fresh, kMiB);
}

TEST(Acks, AckOfAPacketNeverSentIsRejected) {
  LanePair lane;
  lane.enqueue_bytes(10000);
  lane.run_until(at_ms(1));
  std::vector<uint8_t> pkt(64);
  ByteWriter w(pkt);
  encode_header(w, {PacketKind::feedback, 7, 0});
  RangeSet fake;
  fake.insert(1000);
  encode_ack_frame(w, fake, Duration::zero(), 4);
  pkt.resize(w.written());
  EXPECT_EQ(lane.inject_feedback(pkt), TransportError::ack_of_unsent_packet);
}

TEST(Acks, DuplicatePacketIsReportedNotRedelivered) {
  ReceiverConfig rc;
  rc.lane_id = 1;
  LaneReceiver rx(rc);
  std::vector<uint8_t> pkt(1200);
  ByteWriter w(pkt);
  encode_header(w, {PacketKind::data, 1, 0});
  encode_data_frame(w, {0, 0, 100});
  pkt.resize(w.written());
  CountingSink sink;
  EXPECT_EQ(rx.on_datagram_received(Time::zero(), pkt, sink), TransportError::ok);
  EXPECT_EQ(rx.on_datagram_received(Time::zero(), pkt, sink), TransportError::duplicate_packet);
  EXPECT_EQ(sink.frames, 1u);
  EXPECT_EQ(rx.stats().duplicate_packets, 1u);
}

// The first `quick_acks` packets are acked one by one and at once, so the
// packet that met an empty queue gives the sender its RTT sample; after
// that, every `ack_every` packets (or within max_ack_delay).
TEST(Acks, TheFirstPacketsAreAckedOneByOneThenEveryFew) {
  ReceiverConfig rc;
  rc.lane_id = 1;
  rc.ack_every = 8;
  rc.quick_acks = 4;
  LaneReceiver rx(rc);
  CountingSink sink;
  std::vector<uint8_t> out(1200);
  int acks = 0;
  for (uint64_t pn = 0; pn < 20; ++pn) {
    std::vector<uint8_t> pkt(1200);
    ByteWriter w(pkt);
    encode_header(w, {PacketKind::data, 1, pn});
    encode_data_frame(w, {0, pn * 100, 100});
    pkt.resize(w.written());
    ASSERT_EQ(rx.on_datagram_received(Time::zero(), pkt, sink), TransportError::ok);
    const bool acked = rx.poll_transmit(Time::zero(), out).has_value();
    acks += acked;
    if (pn < 4) EXPECT_TRUE(acked) << pn;
  }
  // 4 at once, then one per 8 of the next 16.
  EXPECT_EQ(acks, 4 + 2);
}

TEST(FlowControl, SlowReceiverIsNotFlooded) {
  SenderConfig sc;
  sc.initial_max_data = Bytes::kib(64);
  ReceiverConfig rc;
  rc.receive_window = Bytes::kib(64);
  LanePair lane("delay", Duration::millis(10), sc, rc);
  lane.consume = false;  // the application is stuck
  lane.enqueue_bytes(kMiB);
  lane.run_until(at_ms(500));
  EXPECT_LE(lane.sender->stats().data_bytes_sent, 64u * 1024);
  EXPECT_EQ(lane.sink.fresh, 64u * 1024);
  // The application catches up: the window slides and the rest flows.
  lane.receiver->on_data_consumed(Bytes(lane.sink.fresh));
  lane.consume = true;
  ASSERT_TRUE(lane.run_until_acked(at_ms(10000)));
  EXPECT_EQ(lane.sink.fresh, kMiB);
}

}  // namespace
}  // namespace braid::transport::testing
