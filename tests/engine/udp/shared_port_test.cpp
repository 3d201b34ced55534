// One receiver port shared by the UDP lanes of several sessions (`braid
// recv` puts every UDP lane on its TCP listener's port number): each lane
// gets its own datagrams only — even two sessions' lanes with the same lane
// id — and stray, forged or replayed datagrams are dropped, counted and
// never answered.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/udp/udp_recv_port.hpp"
#include "loopback_pair.hpp"

namespace braid::udp::test {
namespace {

constexpr size_t kMiB = 1 << 20;

UdpLaneConfig session_config(uint64_t session_id, uint8_t secret_fill, uint32_t lane_id) {
  UdpLaneConfig c = base_config("127.0.0.1:0", lane_id);
  c.session_id = session_id;
  c.lane_secret = test_secret(secret_fill);
  return c;
}

// A plain UDP socket for strays: sends to the port, and tells whether
// anything ever came back.
struct Stray {
  std::unique_ptr<UdpSocket> socket;
  explicit Stray(const SocketAddress& port) {
    std::string error;
    socket = UdpSocket::open(*SocketAddress::parse("127.0.0.1:0"), &port, SocketOptions{}, error);
    EXPECT_TRUE(socket) << error;
  }
  void send(std::span<const uint8_t> d) { EXPECT_EQ(socket->send_raw(d), 0); }
  bool heard_anything(int ms) {
    pollfd p{socket->fd(), POLLIN, 0};
    return ::poll(&p, 1, ms) > 0;
  }
};

// A data packet's clear header for `lane` (wire.hpp), a fresh packet number
// and `size` bytes in all, tag included: the shape of the real thing.
std::vector<uint8_t> fake_data_packet(uint32_t lane, uint64_t pn, size_t size = 1200) {
  std::vector<uint8_t> d(size, 0x5a);
  d[0] = 0x40;
  for (int i = 0; i < 4; ++i) d[1 + i] = static_cast<uint8_t>(lane >> (24 - 8 * i));
  for (int i = 0; i < 8; ++i) d[5 + i] = static_cast<uint8_t>(pn >> (56 - 8 * i));
  return d;
}

// Keeps a copy of the first sealed datagram a sender sends.
struct FirstDatagram {
  std::mutex mu;
  std::vector<uint8_t> bytes;
  void operator()(std::span<const uint8_t> d) {
    std::lock_guard lock(mu);
    if (bytes.empty()) bytes.assign(d.begin(), d.end());
  }
  std::vector<uint8_t> get() {
    std::lock_guard lock(mu);
    return bytes;
  }
};

TEST(SharedPort, LanesOfTwoSessionsOnOnePortEachGetTheirOwnDatagrams) {
  std::string error;
  auto port = UdpRecvPort::open(*SocketAddress::parse("127.0.0.1:0"), SocketOptions{}, error);
  ASSERT_TRUE(port) << error;
  // Session A and session B both have a lane 3 (lane ids are per session);
  // B has a lane 4 too. Different secrets and session ids, one port.
  LoopbackPair a3(24 * kMiB, kMiB, 1), b3(24 * kMiB, kMiB, 2), b4(16 * kMiB, kMiB, 3);
  auto first = std::make_shared<FirstDatagram>();
  UdpLaneConfig a3_send = session_config(0xa, 7, 3);
  a3_send.fault.on_sent = [first](std::span<const uint8_t> d) { (*first)(d); };
  ASSERT_TRUE(a3.start_on(port, a3_send, session_config(0xa, 7, 3))) << a3.error();
  ASSERT_TRUE(b3.start_on(port, session_config(0xb, 9, 3), session_config(0xb, 9, 3))) << b3.error();
  ASSERT_TRUE(b4.start_on(port, session_config(0xb, 9, 4), session_config(0xb, 9, 4))) << b4.error();
  EXPECT_EQ(a3.receiver().local_address(), port->local_address());
  EXPECT_EQ(b4.receiver().local_address(), port->local_address());

  a3.send_all();
  b3.send_all();
  b4.send_all();
  ASSERT_TRUE(a3.wait_acked(a3.piece_count()));
  ASSERT_TRUE(b3.wait_acked(b3.piece_count()));
  ASSERT_TRUE(b4.wait_acked(b4.piece_count()));
  EXPECT_TRUE(a3.identical());
  EXPECT_TRUE(b3.identical());
  EXPECT_TRUE(b4.identical());
  EXPECT_EQ(a3.out_of_range() + b3.out_of_range() + b4.out_of_range(), 0u);

  // Strays, all from a source no lane listens to.
  Stray stray(port->local_address());
  const std::vector<uint8_t> runt(10, 0x40);
  stray.send(runt);                                      // malformed: shorter than header + tag
  auto feedback_kind = fake_data_packet(3, 1);
  feedback_kind[0] = 0x41;
  stray.send(feedback_kind);                             // malformed: not a data packet
  stray.send(fake_data_packet(99, 1));                   // unknown lane
  stray.send(fake_data_packet(3, 1u << 30));             // lane 3: both listen to their own senders
  const auto replayed = first->get();
  ASSERT_FALSE(replayed.empty());
  stray.send(replayed);                                  // a genuine datagram of A's lane 3, from elsewhere

  for (int i = 0; i < 200 && port->stats().dropped() < 5; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const UdpPortStats st = port->stats();
  EXPECT_EQ(st.malformed, 2u);
  EXPECT_EQ(st.unknown_lane, 1u);
  EXPECT_EQ(st.foreign_source, 2u);
  EXPECT_EQ(st.unauthenticated, 0u);
  EXPECT_FALSE(stray.heard_anything(100)) << "a stray datagram was answered";

  // None of it reached a lane: their counters show no refusals, nothing new.
  const auto fa = a3.stop().recv, fb3 = b3.stop().recv, fb4 = b4.stop().recv;
  // (Not packets_received: the senders still send after the last ack —
  // probes, acks of acks — and on a loaded machine those land here.)
  EXPECT_EQ(fa.rejected_total() + fb3.rejected_total() + fb4.rejected_total(), 0u);
  EXPECT_EQ(fa.protocol_errors + fb3.protocol_errors + fb4.protocol_errors, 0u);
}

TEST(SharedPort, ALaneWaitingForItsPeerIsClaimedOnlyByAnAuthenticDatagram) {
  std::string error;
  auto port = UdpRecvPort::open(*SocketAddress::parse("127.0.0.1:0"), SocketOptions{}, error);
  ASSERT_TRUE(port) << error;
  // Two sessions' lanes 5 wait for their peers; a forgery for lane 5 is
  // tried on both, claims neither and is never answered.
  LoopbackPair a(8 * kMiB, kMiB, 4), b(8 * kMiB, kMiB, 5);
  UdpLaneConfig ra = session_config(0xa, 7, 5), rb = session_config(0xb, 9, 5);
  ra.role = rb.role = security::Role::server;
  auto lane_a = UdpRecvLane::start_on(port, ra, a, error);
  auto lane_b = UdpRecvLane::start_on(port, rb, b, error);
  ASSERT_TRUE(lane_a && lane_b) << error;
  Stray stray(port->local_address());
  stray.send(fake_data_packet(5, 7));
  for (int i = 0; i < 200 && port->stats().unauthenticated < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(port->stats().unauthenticated, 1u);
  EXPECT_FALSE(stray.heard_anything(100));
  lane_a.reset();
  lane_b.reset();

  // Then real senders: each lane is claimed by its own, the data arrives.
  ASSERT_TRUE(a.start_on(port, session_config(0xa, 7, 5), session_config(0xa, 7, 5))) << a.error();
  ASSERT_TRUE(b.start_on(port, session_config(0xb, 9, 5), session_config(0xb, 9, 5))) << b.error();
  a.send_all();
  b.send_all();
  ASSERT_TRUE(a.wait_acked(a.piece_count()));
  ASSERT_TRUE(b.wait_acked(b.piece_count()));
  EXPECT_TRUE(a.identical());
  EXPECT_TRUE(b.identical());
}

// A NAT in front of the receiver's port: the sender talks to `front`; the
// relay forwards its datagrams to the port from one of two outside sockets
// (the NAT's mapping) and the answers that come back to *that* socket to
// the sender. switch_mapping() is a rebinding: a new outside port, and the
// old mapping forgotten — what arrives on it is dropped.
class Relay {
 public:
  explicit Relay(const SocketAddress& port) {
    front_ = bound_socket(nullptr);
    for (auto& b : outside_) b = bound_socket(&port);
    thread_ = std::thread([this] { run(); });
  }
  ~Relay() {
    stop_ = true;
    thread_.join();
    ::close(front_);
    for (int b : outside_) ::close(b);
  }
  SocketAddress front() const { return local_of(front_); }
  void switch_mapping() { active_ = 1; }

 private:
  static int bound_socket(const SocketAddress* connect_to) {
    const int fd = ::socket(AF_INET, SOCK_DGRAM, 0);
    const auto any = *SocketAddress::parse("127.0.0.1:0");
    EXPECT_EQ(::bind(fd, any.sa(), any.len), 0);
    if (connect_to) {
      EXPECT_EQ(::connect(fd, connect_to->sa(), connect_to->len), 0);
    }
    return fd;
  }
  static SocketAddress local_of(int fd) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
    return SocketAddress::from(reinterpret_cast<sockaddr*>(&ss), len);
  }
  void run() {
    std::vector<uint8_t> buf(65536);
    sockaddr_storage sender{};
    socklen_t sender_len = 0;
    while (!stop_) {
      pollfd p[3] = {{front_, POLLIN, 0}, {outside_[0], POLLIN, 0}, {outside_[1], POLLIN, 0}};
      if (::poll(p, 3, 20) <= 0) continue;
      if (p[0].revents & POLLIN) {
        socklen_t len = sizeof sender;
        const ssize_t n = ::recvfrom(front_, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&sender), &len);
        sender_len = len;
        if (n > 0) (void)::send(outside_[active_], buf.data(), static_cast<size_t>(n), 0);
      }
      for (int i = 0; i < 2; ++i) {
        if (!(p[1 + i].revents & POLLIN)) continue;
        const ssize_t n = ::recv(outside_[i], buf.data(), buf.size(), 0);
        if (n > 0 && i == active_ && sender_len > 0)
          (void)::sendto(front_, buf.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&sender),
                         sender_len);
      }
    }
  }

  int front_ = -1;
  int outside_[2] = {-1, -1};
  std::atomic<int> active_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(SharedPort, ALaneFollowsItsPeerToANewSourceButNotAReplay) {
  std::string error;
  auto port = UdpRecvPort::open(*SocketAddress::parse("127.0.0.1:0"), SocketOptions{}, error);
  ASSERT_TRUE(port) << error;
  Relay nat(port->local_address());
  LoopbackPair pair(32 * kMiB, kMiB, 6);
  auto first = std::make_shared<FirstDatagram>();
  UdpLaneConfig s = session_config(0xc, 5, 2);
  s.rate_limit = Rate::mbit(200);  // 1.3 s in all: the rebinding lands mid-transfer
  s.fault.on_sent = [first](std::span<const uint8_t> d) { (*first)(d); };
  ASSERT_TRUE(pair.start_on(port, s, session_config(0xc, 5, 2), nat.front())) << pair.error();
  pair.send_all();
  ASSERT_TRUE(pair.wait_acked(4));
  nat.switch_mapping();
  ASSERT_LT(pair.acked().size(), pair.piece_count()) << "the transfer ended before the NAT rebound: nothing tested";
  // Without following, every datagram from the new mapping would be
  // foreign and every answer to the old one lost: the lane would starve.
  ASSERT_TRUE(pair.wait_acked(pair.piece_count())) << "acked " << pair.acked().size();
  EXPECT_TRUE(pair.identical());
  EXPECT_EQ(port->stats().migrated, 1u);

  // A genuine but old datagram from a third source moves nothing and is never answered.
  Stray replay(port->local_address());
  const auto old = first->get();
  ASSERT_FALSE(old.empty());
  const uint64_t foreign_before = port->stats().foreign_source;
  replay.send(old);
  for (int i = 0; i < 200 && port->stats().foreign_source == foreign_before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(port->stats().foreign_source, foreign_before + 1);
  EXPECT_EQ(port->stats().migrated, 1u);
  EXPECT_FALSE(replay.heard_anything(100));
  const auto c = pair.stop();
  EXPECT_EQ(c.recv.rejected_total(), 0u);  // trials on a lane that listens elsewhere are not its refusals
}

TEST(SharedPort, TheRegistryGivesOnePortPerAddressAndSaysWhyABindFails) {
  UdpRecvPorts ports;
  std::string error;
  auto p = ports.get(*SocketAddress::parse("127.0.0.1:0"), error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(ports.get(p->local_address(), error), p);
  // The same port number is taken by another socket: the bind fails with a reason.
  UdpRecvPorts other;
  EXPECT_FALSE(other.get(p->local_address(), error));
  EXPECT_NE(error.find("cannot bind UDP"), std::string::npos) << error;
}

}  // namespace
}  // namespace braid::udp::test
