// Pure, virtual-time tests of what the UDP lane adds around the transport
// core: acked data ranges (→ "piece acked"), cancelling a piece, the rate
// cap decorator, and the piece ledger. No sockets, no clock.
#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/transport/cc_registry.hpp"
#include "core/transport/lane_receiver.hpp"
#include "core/transport/lane_sender.hpp"
#include "engine/udp/piece_ledger.hpp"
#include "engine/udp/lane_limits_controller.hpp"

namespace braid::udp::test {
namespace {

using transport::DataRange;

struct NullSink : transport::DataSink {
  void on_data(const DataRange&, std::span<const uint8_t>) override {}
};

// Sender and receiver back to back with a fixed one-way delay, in virtual time.
struct VirtualLane {
  explicit VirtualLane(std::unique_ptr<transport::CongestionController> cc, Duration one_way = Duration::millis(1))
      : delay(one_way), receiver(rc()) {
    transport::SenderConfig sc;
    sc.lane_id = 1;
    sc.max_datagram_size = Bytes(1472);
    sender = std::make_unique<transport::LaneSender>(sc, std::move(cc));
  }
  static transport::ReceiverConfig rc() {
    transport::ReceiverConfig c;
    c.lane_id = 1;
    c.max_datagram_size = Bytes(1472);
    return c;
  }

  Duration delay;
  std::unique_ptr<transport::LaneSender> sender;
  transport::LaneReceiver receiver;
  NullSink sink;
  Time now = Time::zero();
  std::deque<std::pair<Time, std::vector<uint8_t>>> to_recv, to_send;
  std::function<bool(uint64_t)> drop = [](uint64_t) { return false; };
  std::function<void(const transport::Transmit&)> on_transmit = [](const transport::Transmit&) {};
  std::map<uint64_t, uint64_t> acked_by_piece;  // from acked_data()
  uint64_t wire_bytes = 0;
  uint64_t consumed = 0;
  std::vector<uint8_t> buf = std::vector<uint8_t>(9000);

  void step() {
    Time t = std::min(sender->poll_timeout(), receiver.poll_timeout());
    if (!to_recv.empty()) t = std::min(t, to_recv.front().first);
    if (!to_send.empty()) t = std::min(t, to_send.front().first);
    now = std::max(now, t);
    while (!to_recv.empty() && to_recv.front().first <= now) {
      (void)receiver.on_datagram_received(now, to_recv.front().second, sink);
      to_recv.pop_front();
    }
    // The application keeps up: everything received is consumed at once.
    receiver.on_data_consumed(Bytes(receiver.stats().data_bytes_received - consumed));
    consumed = receiver.stats().data_bytes_received;
    while (!to_send.empty() && to_send.front().first <= now) {
      (void)sender->on_datagram_received(now, to_send.front().second);
      for (const DataRange& r : sender->acked_data()) acked_by_piece[r.piece] += r.length;
      to_send.pop_front();
    }
    if (sender->poll_timeout() <= now) sender->on_timeout(now);
    while (auto tx = sender->poll_transmit(now, buf)) {
      on_transmit(*tx);
      wire_bytes += tx->size + transport::kAeadTagSize;
      if (!drop(tx->packet_number)) to_recv.emplace_back(now + delay, std::vector<uint8_t>(buf.begin(), buf.begin() + tx->size));
    }
    while (auto n = receiver.poll_transmit(now, buf))
      to_send.emplace_back(now + delay, std::vector<uint8_t>(buf.begin(), buf.begin() + *n));
  }
  void run_until(Time end) {
    while (now < end) step();
  }
  bool run_until_acked(Time limit) {
    while (now < limit && !sender->all_acked()) step();
    return sender->all_acked();
  }
};

std::unique_ptr<transport::CongestionController> controller(std::string_view id = "delay") {
  transport::ControllerConfig c;
  c.max_datagram_size = Bytes(1472);
  return transport::make_controller(id, c);
}

TEST(CoreHooks, AckedDataReportsEveryByteExactlyOnceDespiteLoss) {
  VirtualLane lane(controller());
  lane.drop = [](uint64_t pn) { return pn == 5 || pn == 6 || pn == 40 || pn % 97 == 13; };
  const std::vector<uint32_t> sizes = {1 << 20, 300'001, 7};
  for (uint64_t p = 0; p < sizes.size(); ++p) lane.sender->enqueue(DataRange{p, p * 10'000'000, sizes[p]});
  ASSERT_TRUE(lane.run_until_acked(Time::zero() + Duration::seconds(30)));
  EXPECT_GT(lane.sender->stats().packets_lost, 0u);
  for (uint64_t p = 0; p < sizes.size(); ++p) EXPECT_EQ(lane.acked_by_piece[p], sizes[p]) << "piece " << p;
}

TEST(CoreHooks, CancelledPieceIsNeverSentOrResentAgain) {
  VirtualLane lane(controller());
  lane.drop = [](uint64_t pn) { return pn % 10 == 3; };  // losses, so resends are in play
  for (uint64_t p = 0; p < 3; ++p) lane.sender->enqueue(DataRange{p, 0, 1 << 20});
  bool cancelled = false;
  uint64_t after_cancel = 0;
  lane.on_transmit = [&](const transport::Transmit& t) {
    for (size_t i = 0; i < t.payload_count; ++i)
      if (cancelled && t.payloads[i].range.piece == 1) ++after_cancel;
  };
  // Run until piece 1 is partly sent (its packets in flight, some lost).
  while (lane.sender->stats().data_bytes_sent < (1u << 20) + 200'000) lane.step();
  lane.sender->cancel_piece(1);
  lane.acked_by_piece.erase(1);
  cancelled = true;
  ASSERT_TRUE(lane.run_until_acked(Time::zero() + Duration::seconds(30)));
  EXPECT_EQ(after_cancel, 0u);
  EXPECT_EQ(lane.acked_by_piece.count(1), 0u);  // nothing of it reported acked after the cancel
  EXPECT_EQ(lane.acked_by_piece[0], 1u << 20);
  EXPECT_EQ(lane.acked_by_piece[2], 1u << 20);
  EXPECT_EQ(lane.sender->queued_bytes().count(), 0u);
}

// --rate-limit in virtual time: the pacing rate never exceeds the cap, and
// the bytes on the wire over 2 s match it within 2 %.
double capped_wire_rate(Rate cap, Rate* pacing = nullptr) {
  auto capped = std::make_unique<LaneLimitsController>(controller(), LaneLimits{cap, Duration::millis(1)});
  LaneLimitsController* cc = capped.get();
  VirtualLane lane(std::move(capped), Duration::millis(5));
  for (uint64_t p = 0; p < 128; ++p) lane.sender->enqueue(DataRange{p, 0, 1 << 20});
  lane.run_until(Time::zero() + Duration::seconds(1));
  const uint64_t at1 = lane.wire_bytes;
  lane.run_until(Time::zero() + Duration::seconds(3));
  if (pacing) *pacing = cc->pacing_rate();
  EXPECT_EQ(cc->id(), "delay");
  return static_cast<double>(lane.wire_bytes - at1) / 2.0;
}

TEST(CoreHooks, RateCapHoldsTheWireRate) {
  for (double mbit : {40.0, 80.0, 160.0}) {
    const Rate cap = Rate::mbit(mbit);
    Rate pacing;
    const double rate = capped_wire_rate(cap, &pacing);
    EXPECT_NEAR(rate, cap.bytes_per_second(), cap.bytes_per_second() * 0.02) << mbit << " Mbit/s";
    EXPECT_LE(pacing.bytes_per_second(), cap.bytes_per_second());
  }
}

// The I/O allowance (pacing × reaction time) waits for a measured rate:
// before the first ack the pacing rate is a guess (326 Mbit/s for 1472-byte
// packets), and the first flight was 55 packets instead of the controller's
// ten — ~300 ms of queue for two lanes on a 4 Mbit/s uplink.
TEST(CoreHooks, TheFirstFlightIsTheControllersInitialWindow) {
  auto limited = std::make_unique<LaneLimitsController>(controller(), LaneLimits{std::nullopt, Duration::millis(2)});
  LaneLimitsController* cc = limited.get();
  VirtualLane lane(std::move(limited), Duration::millis(10));
  uint64_t first_flight = 0;  // packets sent before the first ack can be back (20 ms)
  lane.on_transmit = [&](const transport::Transmit&) {
    if (lane.now < Time::zero() + Duration::millis(20)) ++first_flight;
  };
  for (uint64_t p = 0; p < 8; ++p) lane.sender->enqueue(DataRange{p, 0, 1 << 20});
  ASSERT_TRUE(lane.run_until_acked(Time::zero() + Duration::seconds(5)));
  // Ten packets (an eleventh fits when the packets are a little short of
  // the window's 1472 bytes each); 55 with the allowance from the start.
  EXPECT_GE(first_flight, 10u);
  EXPECT_LE(first_flight, 11u);
  // Once acks measured a rate the allowance is back: at least pacing × 2 ms.
  ASSERT_FALSE(cc->bandwidth_estimate().is_zero());
  EXPECT_GE(cc->congestion_window().count(), cc->pacing_rate().bytes_in(Duration::millis(2)).count());
}

TEST(PieceLedger, GivesBytesWithinThePieceAndAcksOnce) {
  auto data = std::make_shared<std::vector<uint8_t>>(1000);
  for (size_t i = 0; i < data->size(); ++i) (*data)[i] = static_cast<uint8_t>(i);
  PieceLedger l;
  ASSERT_TRUE(l.add(9, 5000, 1000, std::shared_ptr<const uint8_t>(data, data->data())));
  EXPECT_FALSE(l.add(9, 5000, 1000, nullptr));  // one piece at a time
  const uint8_t* at = l.bytes_of(DataRange{9, 5100, 10});
  ASSERT_NE(at, nullptr);
  EXPECT_EQ(at, data->data() + 100);
  EXPECT_EQ(l.bytes_of(DataRange{9, 5995, 10}), nullptr);  // runs past the end
  EXPECT_EQ(l.bytes_of(DataRange{9, 4990, 10}), nullptr);  // starts before it
  EXPECT_EQ(l.bytes_of(DataRange{8, 5000, 10}), nullptr);  // unknown piece
  EXPECT_TRUE(l.mark_started(9));
  EXPECT_FALSE(l.mark_started(9));
  EXPECT_FALSE(l.on_acked(DataRange{9, 5000, 600}));
  EXPECT_TRUE(l.on_acked(DataRange{9, 5600, 400}));
  EXPECT_FALSE(l.contains(9));
  EXPECT_FALSE(l.on_acked(DataRange{9, 5600, 400}));  // forgotten: no second event
}

}  // namespace
}  // namespace braid::udp::test
