// StreamLane (src/engine/transfer/stream_lane.cpp) over a real loopback TCP
// connection: what the peer said before its end reaches the session before
// the lane is reported closed.
#include "engine/transfer/stream_lane.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/lanes/lane_link.hpp"
#include "tcp_pair.hpp"

namespace braid::transfer {
namespace {

class Zeros : public PieceSource {
 public:
  uint32_t transfer_id() const override { return 1; }
  wire::HashAlgo hash() const override { return wire::HashAlgo::xxh3_128; }
  bool read(uint64_t, uint64_t n, uint8_t* dst, std::string&) override {
    std::memset(dst, 0, n);
    return true;
  }
};

/// Records the lane's events in order.
class Recorder : public DataLaneEvents {
 public:
  void on_message(LaneNo, const session::ToSender& m) override {
    if (const auto* e = std::get_if<wire::ErrorMessage>(&m)) add("message:" + e->message);
  }
  void on_piece_started(LaneNo, uint32_t, core::PieceId) override {}
  void on_piece_hashed(LaneNo, uint32_t, core::PieceId, const wire::Digest&) override {}
  void on_piece_written(LaneNo, uint32_t, core::PieceId) override {}
  void on_piece_delivered(LaneNo, uint32_t, core::PieceId) override {}
  void on_transport_rate(LaneNo, Rate) override {}
  void on_read_failed(LaneNo, uint32_t, const std::string&) override {}
  void on_closed(LaneNo, const std::string& reason, bool) override {
    add("closed:" + reason);
    std::lock_guard lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  bool wait_closed(std::chrono::seconds limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return closed_; });
  }
  std::vector<std::string> events() {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  void add(std::string e) {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(e));
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  std::vector<std::string> events_;
};

TEST(StreamLane, WhatThePeerSaidBeforeResettingArrivesBeforeTheLaneIsClosed) {
  // The receiver that was interrupted: it says why, then closes without
  // reading what it was sent (the kernel answers with a reset) while the
  // lane is in the middle of sending pieces, so the lane's write fails first.
  security::LaneSecret secret;
  auto [client_fd, server_fd] = test::tcp_pair();
  std::string error;
  auto client = lanes::LaneLink::create(std::move(client_fd), 7, 0, secret, security::Role::client, error);
  ASSERT_TRUE(client) << error;
  auto server = lanes::LaneLink::create(std::move(server_fd), 7, 0, secret, security::Role::server, error);
  ASSERT_TRUE(server) << error;

  Recorder events;
  StreamLane::Options opts{session::LaneTraits::tcp(std::nullopt), "local", "remote", true, nullptr, {}, {}};
  StreamLane lane(std::move(client), opts, events);
  auto source = std::make_shared<Zeros>();
  for (uint32_t p = 0; p < 64; ++p) {
    core::Assign a;
    a.piece = p;
    a.offset = Bytes(uint64_t{p} << 20);
    a.length = Bytes::mib(1);
    lane.send_piece(source, a);
  }
  // Let the sender fill the socket buffers: its writes are blocked now.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(server->send_message(wire::ErrorMessage{3, "the receiver was interrupted"}));
  server.reset();  // unread data: a reset, not a FIN

  ASSERT_TRUE(events.wait_closed(std::chrono::seconds(10)));
  const auto seen = events.events();
  ASSERT_EQ(seen.size(), 2u) << ::testing::PrintToString(seen);
  EXPECT_EQ(seen[0], "message:the receiver was interrupted");
  EXPECT_EQ(seen[1].rfind("closed:", 0), 0u);
}

}  // namespace
}  // namespace braid::transfer
