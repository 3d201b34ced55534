#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "core/transport/wire.hpp"

namespace braid::transport {
namespace {

TEST(Varint, RoundTripsAtEveryLengthBoundary) {
  for (uint64_t v : {uint64_t{0}, uint64_t{63}, uint64_t{64}, uint64_t{16383}, uint64_t{16384},
                     (uint64_t{1} << 30) - 1, uint64_t{1} << 30, kVarintMax}) {
    std::array<uint8_t, 8> buf{};
    ByteWriter w(buf);
    ASSERT_TRUE(w.put_varint(v));
    EXPECT_EQ(w.written(), varint_size(v));
    ByteReader r(std::span<const uint8_t>(buf.data(), w.written()));
    EXPECT_EQ(r.varint(), v);
    EXPECT_TRUE(r.ok());
  }
  std::array<uint8_t, 8> buf{};
  ByteWriter w(buf);
  EXPECT_FALSE(w.put_varint(kVarintMax + 1));
}

TEST(Wire, HeaderRoundTripAndRejectsGarbage) {
  std::array<uint8_t, 32> buf{};
  ByteWriter w(buf);
  ASSERT_TRUE(encode_header(w, {PacketKind::feedback, 0xdeadbeef, 0x0102030405060708ULL}));
  EXPECT_EQ(w.written(), kHeaderSize);
  ByteReader r(std::span<const uint8_t>(buf.data(), w.written()));
  PacketHeader h;
  ASSERT_EQ(decode_header(r, h), TransportError::ok);
  EXPECT_EQ(h.kind, PacketKind::feedback);
  EXPECT_EQ(h.lane_id, 0xdeadbeefu);
  EXPECT_EQ(h.packet_number, 0x0102030405060708ULL);

  ByteReader short_reader(std::span<const uint8_t>(buf.data(), 5));
  EXPECT_EQ(decode_header(short_reader, h), TransportError::truncated);
  buf[0] = 0x00;
  ByteReader bad(std::span<const uint8_t>(buf.data(), kHeaderSize));
  EXPECT_EQ(decode_header(bad, h), TransportError::wrong_packet_kind);
}

TEST(Wire, DataFrameReservesPayloadAndDecodesIt) {
  std::array<uint8_t, 64> buf{};
  ByteWriter w(buf);
  const DataRange d{5, 1000, 4};
  auto payload = encode_data_frame(w, d);
  ASSERT_EQ(payload.size(), 4u);
  std::fill(payload.begin(), payload.end(), 0xab);
  ByteReader r(std::span<const uint8_t>(buf.data(), w.written()));
  Frame f;
  ASSERT_EQ(decode_frame(r, f), TransportError::ok);
  EXPECT_EQ(f.type, FrameType::data);
  EXPECT_EQ(f.data, d);
  ASSERT_EQ(f.payload.size(), 4u);
  EXPECT_EQ(f.payload[3], 0xab);
  EXPECT_TRUE(r.empty());

  // A frame claiming more payload than the packet holds is truncated.
  ByteReader cut(std::span<const uint8_t>(buf.data(), w.written() - 1));
  EXPECT_EQ(decode_frame(cut, f), TransportError::truncated);
}

TEST(Wire, AckFrameCarriesEveryRangeHighestFirst) {
  RangeSet received;
  received.insert(0, 9);
  received.insert(20, 20);
  received.insert(30, 45);
  std::array<uint8_t, 128> buf{};
  ByteWriter w(buf);
  ASSERT_EQ(encode_ack_frame(w, received, Duration::micros(1500), 32), 3u);
  ByteReader r(std::span<const uint8_t>(buf.data(), w.written()));
  Frame f;
  ASSERT_EQ(decode_frame(r, f), TransportError::ok);
  ASSERT_EQ(f.type, FrameType::ack);
  EXPECT_EQ(f.ack.largest, 45u);
  EXPECT_EQ(f.ack.ack_delay, Duration::micros(1500));
  std::vector<Range> got;
  ASSERT_EQ(f.ack.for_each_range([&](Range x) { got.push_back(x); }), TransportError::ok);
  EXPECT_EQ(got, (std::vector<Range>{{30, 45}, {20, 20}, {0, 9}}));
}

TEST(Wire, AckFrameKeepsTheNewestRangesWhenLimited) {
  RangeSet received;
  for (uint64_t i = 0; i < 20; ++i) received.insert(i * 3);
  std::array<uint8_t, 256> buf{};
  ByteWriter w(buf);
  ASSERT_EQ(encode_ack_frame(w, received, Duration::zero(), 4), 4u);
  ByteReader r(std::span<const uint8_t>(buf.data(), w.written()));
  Frame f;
  ASSERT_EQ(decode_frame(r, f), TransportError::ok);
  std::vector<Range> got;
  ASSERT_EQ(f.ack.for_each_range([&](Range x) { got.push_back(x); }), TransportError::ok);
  EXPECT_EQ(got, (std::vector<Range>{{57, 57}, {54, 54}, {51, 51}, {48, 48}}));
}

// Found by fuzz/targets/range_set.cpp: a packet number beyond the varint
// range (the peer chooses it) made the encoder write the frame type and
// then fail every varint silently, yet report the ranges as written.
TEST(Wire, AckFrameOfUnencodablePacketNumbersWritesNothing) {
  RangeSet received;
  received.insert(5, 9);
  received.insert(kVarintMax + 1);
  std::array<uint8_t, 64> buf{};
  ByteWriter w(buf);
  EXPECT_EQ(encode_ack_frame(w, received, Duration::zero(), 8), 0u);
  EXPECT_EQ(w.written(), 0u);
  RangeSet fine;
  fine.insert(kVarintMax);
  ASSERT_EQ(encode_ack_frame(w, fine, Duration::zero(), 8), 1u);
  ByteReader r(std::span<const uint8_t>(buf.data(), w.written()));
  Frame f;
  ASSERT_EQ(decode_frame(r, f), TransportError::ok);
  EXPECT_EQ(f.ack.largest, kVarintMax);
}

TEST(Wire, AckRangeBelowZeroIsRejected) {
  // largest 2, first range 1 → [1,2]; then gap 0 would put the next range's
  // top at 1 - 0 - 2 < 0.
  std::array<uint8_t, 16> buf{};
  ByteWriter w(buf);
  w.put_u8(static_cast<uint8_t>(FrameType::ack));
  w.put_varint(2);
  w.put_varint(0);
  w.put_varint(1);
  w.put_varint(1);
  w.put_varint(0);
  w.put_varint(0);
  ByteReader r(std::span<const uint8_t>(buf.data(), w.written()));
  Frame f;
  ASSERT_EQ(decode_frame(r, f), TransportError::ok);
  EXPECT_EQ(f.ack.for_each_range([](Range) {}), TransportError::bad_ack_range);
}

TEST(Wire, UnknownFrameTypeIsAnError) {
  const std::array<uint8_t, 1> buf{0x3f};
  ByteReader r(buf);
  Frame f;
  EXPECT_EQ(decode_frame(r, f), TransportError::unknown_frame);
}

}  // namespace
}  // namespace braid::transport
