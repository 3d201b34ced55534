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

/// Both ends of one lane over a loopback TCP connection.
struct LinkPair {
  std::unique_ptr<lanes::LaneLink> client, server;
};
LinkPair linked() {
  security::LaneSecret secret;
  auto [client_fd, server_fd] = test::tcp_pair();
  std::string error;
  LinkPair p;
  p.client = lanes::LaneLink::create(std::move(client_fd), 7, 0, secret, security::Role::client, error);
  EXPECT_TRUE(p.client) << error;
  p.server = lanes::LaneLink::create(std::move(server_fd), 7, 0, secret, security::Role::server, error);
  EXPECT_TRUE(p.server) << error;
  return p;
}

/// A TCP lane's options, as the tests here use them.
StreamLane::Options tcp_options() {
  return {session::LaneTraits::tcp(std::nullopt), "local", "remote", true, nullptr, {}, {}};
}

TEST(StreamLane, WhatThePeerSaidBeforeResettingArrivesBeforeTheLaneIsClosed) {
  // The receiver that was interrupted: it says why, then closes without
  // reading what it was sent (the kernel answers with a reset) while the
  // lane is in the middle of sending pieces, so the lane's write fails first.
  auto [client, server] = linked();
  ASSERT_TRUE(client && server);

  Recorder events;
  StreamLane::Options opts = tcp_options();
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

// Issue 18: a stale copy of a piece acked on another lane, whose files the
// walk let go (PieceSource::released), is dropped as a cancel: the peer
// hears piece_abort, the lane goes on with the next piece, and no read
// failure (which would end the transfer) is reported.
class LetGoBelow : public PieceSource {
 public:
  explicit LetGoBelow(uint64_t below) : below_(below) {}
  uint32_t transfer_id() const override { return 1; }
  wire::HashAlgo hash() const override { return wire::HashAlgo::xxh3_128; }
  bool read(uint64_t off, uint64_t n, uint8_t* dst, std::string& error) override {
    if (off < below_) {
      error = "let go";
      return false;
    }
    std::memset(dst, 7, n);
    return true;
  }
  bool released(uint64_t off) const override { return off < below_; }

 private:
  uint64_t below_;
};

class CountReadFailures : public Recorder {
 public:
  void on_read_failed(LaneNo, uint32_t, const std::string& reason) override {
    std::lock_guard lock(mu);
    failures.push_back(reason);
  }
  std::mutex mu;
  std::vector<std::string> failures;
};

TEST(StreamLane, AStaleCopyOfBytesLetGoIsAbortedAndTheNextPieceGoes) {
  auto [client, server] = linked();
  ASSERT_TRUE(client && server);
  CountReadFailures events;
  StreamLane::Options opts = tcp_options();
  StreamLane lane(std::move(client), opts, events);
  auto source = std::make_shared<LetGoBelow>(uint64_t{1} << 20);
  for (uint32_t p = 0; p < 2; ++p) {
    core::Assign a;
    a.piece = p;
    a.offset = Bytes(uint64_t{p} << 20);
    a.length = Bytes::kib(64);
    lane.send_piece(source, a);
  }
  // Piece 0 is aborted before any of its bytes; piece 1's bytes follow.
  lanes::Incoming in = server->read();
  ASSERT_EQ(in.status, lanes::ReadStatus::frame) << in.reason;
  ASSERT_EQ(in.type, wire::FrameType::piece_abort);
  wire::PieceAbort abort;
  ASSERT_TRUE(wire::decode(in.payload, abort));
  EXPECT_EQ(abort.piece, 0u);
  in = server->read();
  ASSERT_EQ(in.status, lanes::ReadStatus::frame) << in.reason;
  ASSERT_EQ(in.type, wire::FrameType::piece_data);
  wire::PieceHeader h;
  size_t data_length = 0;
  ASSERT_TRUE(wire::decode_piece_header(in.payload, h, data_length));
  EXPECT_EQ(h.piece, 1u);
  std::lock_guard lock(events.mu);
  EXPECT_TRUE(events.failures.empty()) << events.failures.front();
}

}  // namespace
}  // namespace braid::transfer
