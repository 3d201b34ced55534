// Wire size of frames read from TUN: plain packets, and TCP super-packets
// (GSO) that stand for several segments, each with its own headers.
#include "emu/wire_size.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace netlab {
namespace {

std::vector<std::byte> frame(std::uint8_t gso_type, std::uint16_t gso_size, int ip_version, std::size_t payload) {
  const std::size_t ip_header = ip_version == 4 ? 20 : 40;
  const std::size_t tcp_header = 32;  // with timestamps
  std::vector<std::byte> f(kVnetHeaderBytes + ip_header + tcp_header + payload);
  f[1] = std::byte{gso_type};
  f[4] = std::byte(gso_size & 0xff);  // little-endian, as TUN writes it on x86
  f[5] = std::byte(gso_size >> 8);
  std::byte* ip = f.data() + kVnetHeaderBytes;
  if (ip_version == 4) {
    ip[0] = std::byte{0x45};
    ip[9] = std::byte{6};
  } else {
    ip[0] = std::byte{0x60};
    ip[6] = std::byte{6};
  }
  ip[ip_header + 12] = std::byte{(tcp_header / 4) << 4};
  return f;
}

TEST(WireSize, PlainPacketIsItsIpLength) {
  const auto f = frame(0, 0, 4, 1448);
  const WireSize ws = wire_size(f);
  EXPECT_EQ(ws.bytes, 1500u);
  EXPECT_EQ(ws.packets, 1u);
}

TEST(WireSize, TcpSuperPacketCountsEverySegmentsHeaders) {
  const auto f = frame(1, 1448, 4, 10 * 1448);
  const WireSize ws = wire_size(f);
  EXPECT_EQ(ws.packets, 10u);
  EXPECT_EQ(ws.bytes, 10u * 1500u);
}

TEST(WireSize, UdpSuperPacketCountsEverySegmentsHeaders) {
  // UDP_SEGMENT (gso_type 5): 44 datagrams of 1472 bytes behind one IPv4 + UDP header.
  std::vector<std::byte> f(kVnetHeaderBytes + 20 + 8 + 44 * 1472);
  f[1] = std::byte{5};
  f[4] = std::byte(1472 & 0xff);
  f[5] = std::byte(1472 >> 8);
  f[kVnetHeaderBytes] = std::byte{0x45};
  f[kVnetHeaderBytes + 9] = std::byte{17};
  const WireSize ws = wire_size(f);
  EXPECT_EQ(ws.packets, 44u);
  EXPECT_EQ(ws.bytes, 44u * 1500u);
}

TEST(WireSize, ShortLastSegment) {
  const auto f = frame(4, 1428, 6, 2 * 1428 + 100);  // IPv6: 40 + 32 bytes of headers
  const WireSize ws = wire_size(f);
  EXPECT_EQ(ws.packets, 3u);
  EXPECT_EQ(ws.bytes, 2u * 1500u + 172u);
}

TEST(WireSize, GarbageCountsAsOnePacket) {
  std::vector<std::byte> f(kVnetHeaderBytes + 30, std::byte{0xff});
  f[1] = std::byte{1};
  f[4] = std::byte{100};
  const WireSize ws = wire_size(f);
  EXPECT_EQ(ws.packets, 1u);
  EXPECT_EQ(ws.bytes, 30u);
}

}  // namespace
}  // namespace netlab
