// recv_all's ack_each_read (src/engine/lanes/tcp.cpp) over a real loopback
// TCP connection: the ACK of a lone full-sized segment is sent as soon as it
// is read. A receiver that also talks back (braid's acknowledges pieces on
// the lane) puts Linux's ACKs in their interactive mode, where a lone
// segment's ACK waits for the next segment; on a paced lane that wait is a
// pacing gap in every RTT sample, which the sender's cap read as queue.
#include "engine/lanes/tcp.hpp"

#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine/security/unique_fd.h"
#include "../tcp_pair.hpp"

namespace braid::lanes {
namespace {

using Clock = std::chrono::steady_clock;

uint32_t unacked(int fd) {
  tcp_info ti{};
  socklen_t len = sizeof ti;
  EXPECT_EQ(::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len), 0) << "no TCP_INFO: nothing is measured";
  return ti.tcpi_unacked;
}

/// The pattern of a paced lane whose ACK count is out of step: the receiver
/// answers the first few segments (as braid's does), then one lone segment,
/// then pairs of full segments 25 ms apart, the reader receiving them all
/// with one recv_all. Returns how many of the pairs still had a segment
/// unacknowledged 18 ms after they were sent (loopback's RTT is µs).
int pairs_with_an_ack_held(bool ack_each_read) {
  constexpr int kAnswered = 4, kPairs = 40;
  auto [client, server] = test::tcp_pair();
  int one = 1;
  ::setsockopt(client.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int mss = 0;
  socklen_t mss_len = sizeof mss;
  EXPECT_EQ(::getsockopt(client.get(), IPPROTO_TCP, TCP_MAXSEG, &mss, &mss_len), 0);
  const size_t segment = static_cast<size_t>(mss);
  std::atomic<bool> read_ok{true};
  std::thread reader([&, fd = server.get()] {
    int err = 0;
    std::vector<uint8_t> in(segment * (1 + 2 * kPairs));
    const uint8_t answer[10] = {};
    for (int i = 0; i < kAnswered; ++i)
      read_ok = read_ok && recv_all(fd, in.data(), segment, err, ack_each_read) && send_all(fd, answer, 10, err);
    read_ok = read_ok && recv_all(fd, in.data(), in.size(), err, ack_each_read);
    if (!read_ok) ::shutdown(fd, SHUT_RDWR);  // the sender fails at once rather than fill the buffers
  });
  std::vector<uint8_t> out(2 * segment, 7);
  int err = 0;
  for (int i = 0; i < kAnswered + 1; ++i) {  // the answered ones, then the lone one
    EXPECT_TRUE(send_all(client.get(), out.data(), segment, err));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  int held = 0;
  for (int i = 0; i < kPairs; ++i) {
    const auto sent = Clock::now();
    EXPECT_TRUE(send_all(client.get(), out.data(), out.size(), err));
    std::this_thread::sleep_until(sent + std::chrono::milliseconds(18));
    if (unacked(client.get()) > 0) ++held;
    std::this_thread::sleep_until(sent + std::chrono::milliseconds(25));
  }
  reader.join();
  EXPECT_TRUE(read_ok);
  std::printf("ack_each_read %d: %d of %d pairs with an ACK held back\n", ack_each_read, held, kPairs);
  return held;
}

TEST(TcpRecv, EachReadSendsTheAckTheKernelHeldForALoneSegment) {
  // 0 of 40 measured. A busy machine can delay the reader's wake-up past
  // the 18 ms now and then (make test runs tests side by side): a few such
  // are allowed.
  EXPECT_LE(pairs_with_an_ack_held(true), 6);
  // What that is worth: without it the kernel held every second pair's ACK
  // (20 of 40) in most runs here, but whether it enters its interactive
  // mode depends on timing (once, beside other tests, it held 1). Up to
  // three tries for a run that shows the hold; none is a skip that says so.
  int held_without = 0;
  for (int attempt = 0; attempt < 3 && held_without < 14; ++attempt)
    held_without = std::max(held_without, pairs_with_an_ack_held(false));
  if (held_without < 14)
    GTEST_SKIP() << "the kernel held only " << held_without
                 << " of 40 ACKs without ack_each_read in three tries: this run cannot show what the option is for";
  EXPECT_LE(pairs_with_an_ack_held(true), 6) << "again, beside a kernel seen holding ACKs";
}

}  // namespace
}  // namespace braid::lanes
