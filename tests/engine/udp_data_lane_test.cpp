// UdpDataLane (src/engine/transfer/udp_data_lane.cpp) over a real loopback
// UDP lane: destroying it while its I/O thread still delivers events. The
// events read the lane's transport through the lane's own pointer (an ack's
// rate report, on_closed's heard_peer), so that pointer must stay whole
// until the thread has ended. Seen as a crash of `braid send` at its close
// (integration.udp.crash-rerun, 1 run in 12).
#include "engine/transfer/udp_data_lane.hpp"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "engine/udp/udp_recv_lane.hpp"

namespace braid::transfer {
namespace {

using namespace std::chrono_literals;

udp::UdpLaneConfig lane_config(uint32_t lane_id) {
  udp::UdpLaneConfig c;
  c.lane_id = lane_id;
  c.session_id = 0x5566778899aabbccULL;
  std::array<uint8_t, 32> secret{};
  secret.fill(9);
  c.lane_secret = security::LaneSecret(std::span<const uint8_t, 32>(secret));
  c.local = *udp::SocketAddress::parse("127.0.0.1:0");
  return c;
}

class Sink : public udp::UdpRecvEvents {
 public:
  size_t on_data(uint64_t, uint64_t, std::span<const uint8_t> bytes) override { return bytes.size(); }
  void on_closed(const std::string&) override {}
};

class Pattern : public PieceSource {
 public:
  uint32_t transfer_id() const override { return 1; }
  wire::HashAlgo hash() const override { return wire::HashAlgo::xxh3_128; }
  bool read(uint64_t offset, uint64_t n, uint8_t* dst, std::string&) override {
    for (uint64_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>((offset + i) * 131);
    return true;
  }
};

/// Releases each piece once it is hashed (as the session does after its
/// header went) and records what the lane said.
class Events : public DataLaneEvents {
 public:
  UdpDataLane* lane = nullptr;
  void on_message(LaneNo, const session::ToSender&) override {}
  void on_piece_started(LaneNo, uint32_t, core::PieceId) override {}
  void on_piece_hashed(LaneNo, uint32_t transfer, core::PieceId piece, const wire::Digest&) override {
    lane->release_piece(transfer, piece);
  }
  void on_piece_written(LaneNo, uint32_t, core::PieceId) override {}
  void on_piece_delivered(LaneNo, uint32_t, core::PieceId) override {
    std::lock_guard lock(mu_);
    ++delivered_;
    cv_.notify_all();
  }
  void on_transport_rate(LaneNo, Rate) override {}
  void on_read_failed(LaneNo, uint32_t, const std::string&) override {}
  void on_closed(LaneNo, const std::string&, bool heard_peer) override {
    std::lock_guard lock(mu_);
    closed_heard_peer_ = heard_peer;
  }
  bool wait_delivered(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 20s, [&] { return delivered_ >= n; });
  }
  std::optional<bool> closed_heard_peer() {
    std::lock_guard lock(mu_);
    return closed_heard_peer_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int delivered_ = 0;
  std::optional<bool> closed_heard_peer_;
};

struct Pair {
  Sink sink;
  std::unique_ptr<udp::UdpRecvLane> receiver;
  Events events;
  std::unique_ptr<UdpDataLane> sender;

  void start() {
    std::string error;
    auto rc = lane_config(4);
    rc.role = security::Role::server;
    receiver = udp::UdpRecvLane::start(rc, sink, error);
    ASSERT_TRUE(receiver) << error;
    auto sc = lane_config(4);
    sc.role = security::Role::client;
    sc.remote = receiver->local_address();
    sender = UdpDataLane::start(sc, events, error);
    ASSERT_TRUE(sender) << error;
    events.lane = sender.get();
  }
  void send(int pieces, uint64_t piece_size) {
    auto source = std::make_shared<Pattern>();
    for (int p = 0; p < pieces; ++p) {
      core::Assign a;
      a.piece = static_cast<core::PieceId>(p);
      a.offset = Bytes(static_cast<uint64_t>(p) * piece_size);
      a.length = Bytes(piece_size);
      sender->send_piece(source, a);
    }
  }
};

TEST(UdpDataLane, ItsLastEventStillSeesItsTransportWhenItIsDestroyed) {
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(pair.start());
  pair.send(1, 256 << 10);
  ASSERT_TRUE(pair.events.wait_delivered(1));
  pair.sender.reset();  // on_closed runs inside: it must see the peer it heard
  ASSERT_TRUE(pair.events.closed_heard_peer().has_value());
  EXPECT_TRUE(*pair.events.closed_heard_peer());
}

TEST(UdpDataLane, IsDestroyedSafelyWhileAcksAreStillArriving) {
  // Acks keep coming while the lane is torn down; each reads the transport's
  // counters for its rate report. Several rounds, as the window is narrow.
  for (int round = 0; round < 5; ++round) {
    Pair pair;
    ASSERT_NO_FATAL_FAILURE(pair.start());
    pair.send(24, 1 << 20);
    ASSERT_TRUE(pair.events.wait_delivered(1));
    pair.sender.reset();
    EXPECT_TRUE(pair.events.closed_heard_peer().value_or(false)) << "round " << round;
  }
}

}  // namespace
}  // namespace braid::transfer
