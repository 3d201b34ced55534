// The packet trace: what a line says about a frame, and that the file gets
// every line (flushed when the emulator stops).
#include "emu/packet_trace.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <vector>

#include "emu/wire_size.hpp"

namespace netlab {
namespace {

void put16(std::byte* p, std::uint32_t v) {
  p[0] = std::byte(v >> 8);
  p[1] = std::byte(v & 0xff);
}
void put32(std::byte* p, std::uint32_t v) {
  put16(p, v >> 16);
  put16(p + 2, v & 0xffff);
}

/// A virtio_net_hdr, an IPv4 header and a TCP header with timestamps (32 bytes), then `payload` bytes.
std::vector<std::byte> tcp4(std::uint16_t sport, std::uint16_t dport, std::uint32_t seq, std::uint32_t ack,
                            std::uint8_t flags, std::size_t payload) {
  std::vector<std::byte> f(kVnetHeaderBytes + 20 + 32 + payload);
  std::byte* ip = f.data() + kVnetHeaderBytes;
  ip[0] = std::byte{0x45};
  ip[9] = std::byte{6};
  std::byte* tcp = ip + 20;
  put16(tcp, sport);
  put16(tcp + 2, dport);
  put32(tcp + 4, seq);
  put32(tcp + 8, ack);
  tcp[12] = std::byte{(32 / 4) << 4};
  tcp[13] = std::byte{flags};
  return f;
}

TEST(PacketTrace, ATcpSegmentShowsItsPortsSequenceAckLengthAndFlags) {
  const auto f = tcp4(36937, 7901, 953675846u, 897531616u, 0x18, 1448);  // PSH + ACK
  const PacketSummary s = summarize_packet(f);
  EXPECT_EQ(s.protocol, 6);
  EXPECT_EQ(s.src_port, 36937);
  EXPECT_EQ(s.dst_port, 7901);
  EXPECT_EQ(s.seq, 953675846u);
  EXPECT_EQ(s.ack, 897531616u);
  EXPECT_EQ(s.payload, 1448u);
  EXPECT_EQ(trace_line(6510453, 'i', 0, true, s), "6510453 i 0 up tcp 36937 7901 953675846 897531616 1448 P.\n");
}

TEST(PacketTrace, FlagsReadAsTcpdumpPrintsThem) {
  EXPECT_EQ(trace_line(1, 'o', 2, false, summarize_packet(tcp4(1, 2, 3, 0, 0x02, 0))),
            "1 o 2 down tcp 1 2 3 0 0 S\n");
  EXPECT_EQ(trace_line(1, 'o', 0, false, summarize_packet(tcp4(1, 2, 3, 4, 0x11, 0))),
            "1 o 0 down tcp 1 2 3 4 0 F.\n");
  EXPECT_EQ(trace_line(1, 'o', 0, false, summarize_packet(tcp4(1, 2, 3, 4, 0x04, 0))),
            "1 o 0 down tcp 1 2 3 4 0 R\n");
  EXPECT_EQ(trace_line(1, 'o', 0, false, summarize_packet(tcp4(1, 2, 3, 4, 0xff, 0))),
            "1 o 0 down tcp 1 2 3 4 0 FSRP.UEW\n");
}

TEST(PacketTrace, AUdpDatagramOverIpv6ShowsPortsAndLength) {
  std::vector<std::byte> f(kVnetHeaderBytes + 40 + 8 + 1200);
  std::byte* ip = f.data() + kVnetHeaderBytes;
  ip[0] = std::byte{0x60};
  ip[6] = std::byte{17};
  put16(ip + 40, 50000);
  put16(ip + 42, 7902);
  const PacketSummary s = summarize_packet(f);
  EXPECT_EQ(s.protocol, 17);
  EXPECT_EQ(s.src_port, 50000);
  EXPECT_EQ(s.dst_port, 7902);
  EXPECT_EQ(s.payload, 1200u);
  EXPECT_EQ(trace_line(5, 'i', 1, true, s), "5 i 1 up udp 50000 7902 0 0 1200 -\n");
}

TEST(PacketTrace, WhatItCannotParseIsOther) {
  std::vector<std::byte> icmp(kVnetHeaderBytes + 20 + 64);
  icmp[kVnetHeaderBytes] = std::byte{0x45};
  icmp[kVnetHeaderBytes + 9] = std::byte{1};
  EXPECT_EQ(summarize_packet(icmp).protocol, 0);
  std::vector<std::byte> truncated_tcp = tcp4(1, 2, 3, 4, 0x10, 0);
  truncated_tcp.resize(kVnetHeaderBytes + 20 + 10);  // TCP header cut short
  EXPECT_EQ(summarize_packet(truncated_tcp).protocol, 0);
  EXPECT_EQ(summarize_packet(std::vector<std::byte>(3)).protocol, 0);
  std::vector<std::byte> short_ihl = tcp4(1, 2, 3, 4, 0x10, 0);
  short_ihl[kVnetHeaderBytes] = std::byte{0x44};  // an IPv4 header of 16 bytes: not a header
  EXPECT_EQ(summarize_packet(short_ihl).protocol, 0);
  std::vector<std::byte> short_tcp = tcp4(1, 2, 3, 4, 0x10, 0);
  short_tcp[kVnetHeaderBytes + 20 + 12] = std::byte{4 << 4};  // a TCP data offset of 16 bytes
  EXPECT_EQ(summarize_packet(short_tcp).protocol, 0);
  std::vector<std::byte> fragment = tcp4(1, 2, 3, 4, 0x10, 100);
  fragment[kVnetHeaderBytes + 7] = std::byte{0x10};  // a later fragment: its payload is not a TCP header
  EXPECT_EQ(summarize_packet(fragment).protocol, 0);
  EXPECT_EQ(trace_line(0, 'i', 0, true, PacketSummary{}), "0 i 0 up other 0 0 0 0 0 -\n");
}

TEST(PacketTrace, TheFileHasAHeaderAndEveryRecordAfterAFlush) {
  const std::string path = ::testing::TempDir() + "packet_trace_test." + std::to_string(::getpid());
  PacketTrace trace;
  ASSERT_TRUE(trace.open(path)) << trace.error();
  trace.header(1796461932.760929);
  const auto seg = tcp4(40000, 7901, 1, 1, 0x10, 1448);
  for (int i = 0; i < 1000; ++i) trace.record(at(std::chrono::microseconds(i)), i % 2 ? 'o' : 'i', 0, true, seg);
  trace.flush();
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_NE(line.find("TIME_US 0 is 1796461932.760929"), std::string::npos) << line;
  int lines = 0;
  std::string last;
  while (std::getline(in, line)) {
    ++lines;
    last = line;
  }
  EXPECT_EQ(lines, 1000);
  EXPECT_EQ(last, "999 o 0 up tcp 40000 7901 1 1 1448 .");
  std::remove(path.c_str());
}

TEST(PacketTrace, AnUnwritablePathSaysWhy) {
  PacketTrace trace;
  EXPECT_FALSE(trace.open("/nonexistent-dir/trace.txt"));
  EXPECT_NE(trace.error().find("/nonexistent-dir/trace.txt"), std::string::npos) << trace.error();
  EXPECT_FALSE(trace.enabled());
}

}  // namespace
}  // namespace netlab
