// Test harness: one sending and one receiving UDP lane over loopback, a
// random in-memory "file" cut into pieces, and a receive buffer. The sender
// hands pieces to the lane as the engine would; the receiver copies each
// data range into place (idempotent, as pwrite is).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/udp/udp_recv_lane.hpp"
#include "engine/udp/udp_send_lane.hpp"

namespace braid::udp::test {

inline security::LaneSecret test_secret(uint8_t fill = 7) {
  std::array<uint8_t, 32> b{};
  b.fill(fill);
  return security::LaneSecret(std::span<const uint8_t, 32>(b));
}

inline UdpLaneConfig base_config(const std::string& local, uint32_t lane_id = 3) {
  UdpLaneConfig c;
  c.lane_id = lane_id;
  c.session_id = 0x1122334455667788ULL;
  c.lane_secret = test_secret();
  c.local = *SocketAddress::parse(local);
  return c;
}

/// Kernel drops on a UDP socket bound to `port` (the last column of
/// /proc/net/udp{,6}): loss the test did not inject, e.g. a receive buffer
/// overflowing while the CPU is busy with other work.
inline uint64_t kernel_drops(uint16_t port) {
  uint64_t total = 0;
  for (const char* path : {"/proc/net/udp", "/proc/net/udp6"}) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream ss(line);
      std::string sl, local;
      ss >> sl >> local;
      const auto colon = local.rfind(':');
      if (colon == std::string::npos || std::stoul(local.substr(colon + 1), nullptr, 16) != port) continue;
      std::string last, tok;
      while (ss >> tok) last = tok;
      total += std::stoull(last);
    }
  }
  return total;
}

class LoopbackPair : public UdpSendEvents, public UdpRecvEvents {
 public:
  /// `bytes` of random data in pieces of `piece_size`.
  LoopbackPair(size_t bytes, size_t piece_size, uint64_t seed = 42)
      : piece_size_(piece_size),
        source_(std::make_shared<std::vector<uint8_t>>(bytes)),
        dest_(bytes, 0) {
    std::mt19937_64 rng(seed);
    auto* p = reinterpret_cast<uint64_t*>(source_->data());
    for (size_t i = 0; i < bytes / 8; ++i) p[i] = rng();
  }

  // The lanes call back into this object until they are gone.
  ~LoopbackPair() { stop(); }

  /// Starts the receiver first (port 0, peer learnt), then the sender.
  bool start(UdpLaneConfig send_cfg, UdpLaneConfig recv_cfg) { return start_on(nullptr, send_cfg, recv_cfg); }
  /// As start(), with the receiving lane on a shared `port` (null: a port of its own).
  /// `via`: the sender sends there instead (a relay in front of the receiver).
  bool start_on(std::shared_ptr<UdpRecvPort> port, UdpLaneConfig send_cfg, UdpLaneConfig recv_cfg,
                std::optional<SocketAddress> via = std::nullopt) {
    std::string error;
    recv_cfg.role = security::Role::server;
    recv_ = port ? UdpRecvLane::start_on(std::move(port), recv_cfg, *this, error)
                 : UdpRecvLane::start(recv_cfg, *this, error);
    if (!recv_) {
      error_ = "receiver: " + error;
      return false;
    }
    send_cfg.role = security::Role::client;
    send_cfg.remote = via ? *via : recv_->local_address();
    send_ = UdpSendLane::start(send_cfg, *this, error);
    if (!send_) {
      error_ = "sender: " + error;
      return false;
    }
    return true;
  }

  size_t piece_count() const { return (source_->size() + piece_size_ - 1) / piece_size_; }

  void send_piece(uint64_t piece) {
    const uint64_t off = piece * piece_size_;
    const uint64_t len = std::min<uint64_t>(piece_size_, source_->size() - off);
    send_->send_piece(piece, off, len, std::shared_ptr<const uint8_t>(source_, source_->data() + off));
  }
  void send_all() {
    start_ = std::chrono::steady_clock::now();
    for (uint64_t p = 0; p < piece_count(); ++p) send_piece(p);
  }

  /// Waits until `n` pieces are acked (or the timeout / the lane closing).
  bool wait_acked(size_t n, std::chrono::seconds timeout = std::chrono::seconds(30)) {
    std::unique_lock lock(mu_);
    const bool ok = cv_.wait_for(lock, timeout, [&] { return acked_.size() >= n || send_closed_; });
    return ok && acked_.size() >= n;
  }
  double seconds_to_last_ack() const { return std::chrono::duration<double>(last_ack_ - start_).count(); }
  bool identical() const { return std::memcmp(source_->data(), dest_.data(), dest_.size()) == 0; }

  // UdpSendEvents
  void on_piece_acked(uint64_t piece) override {
    std::lock_guard lock(mu_);
    acked_.insert(piece);
    ++ack_events_;
    last_ack_ = std::chrono::steady_clock::now();
    cv_.notify_all();
  }
  void on_piece_started(uint64_t piece) override {
    std::lock_guard lock(mu_);
    started_.insert(piece);
  }
  // Both lanes' on_closed land here; the flag says whose.
  void on_closed(const std::string& reason) override {
    std::lock_guard lock(mu_);
    closed_reasons_.push_back(reason);
    if (send_ && send_->closed()) send_closed_ = true;
    cv_.notify_all();
  }
  // UdpRecvEvents
  size_t on_data(uint64_t piece, uint64_t offset, std::span<const uint8_t> bytes) override {
    (void)piece;
    if (offset + bytes.size() > dest_.size()) {
      ++out_of_range_;
      return bytes.size();
    }
    std::memcpy(dest_.data() + offset, bytes.data(), bytes.size());
    return bytes.size();
  }

  UdpSendLane& sender() { return *send_; }
  UdpRecvLane& receiver() { return *recv_; }
  const std::string& error() const { return error_; }
  std::set<uint64_t> acked() {
    std::lock_guard lock(mu_);
    return acked_;
  }
  uint64_t ack_events() {
    std::lock_guard lock(mu_);
    return ack_events_;
  }
  std::vector<std::string> closed_reasons() {
    std::lock_guard lock(mu_);
    return closed_reasons_;
  }
  bool wait_sender_closed(std::chrono::seconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return send_closed_; });
  }
  uint64_t out_of_range() const { return out_of_range_; }
  struct Final {
    UdpLaneCounters send, recv;
  };
  /// Stops both lanes and returns their final counters.
  Final stop() {
    Final f;
    if (send_) send_->close();
    if (recv_) recv_->close();
    for (int i = 0; i < 5000 && ((send_ && !send_->closed()) || (recv_ && !recv_->closed())); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (send_) f.send = send_->counters();
    if (recv_) f.recv = recv_->counters();
    // The sending lane's thread ends first (its on_closed has run then);
    // the receiving lane's on_closed reads send_ under mu_, so it is
    // taken out under mu_ and destroyed outside it.
    if (send_) send_->stop();
    std::unique_ptr<UdpSendLane> gone;
    {
      std::lock_guard lock(mu_);
      gone = std::move(send_);
    }
    gone.reset();
    recv_.reset();
    return f;
  }

 private:
  size_t piece_size_;
  std::shared_ptr<std::vector<uint8_t>> source_;
  std::vector<uint8_t> dest_;
  std::unique_ptr<UdpRecvLane> recv_;
  std::unique_ptr<UdpSendLane> send_;
  std::string error_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<uint64_t> acked_, started_;
  uint64_t ack_events_ = 0;
  std::vector<std::string> closed_reasons_;
  bool send_closed_ = false;
  std::atomic<uint64_t> out_of_range_{0};
  std::chrono::steady_clock::time_point start_, last_ack_;
};

}  // namespace braid::udp::test
