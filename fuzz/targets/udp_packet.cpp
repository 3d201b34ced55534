// A UDP lane packet after opening (core/transport/wire.hpp): the 13-byte
// header, then frames until the packet ends, decoded as the lane does
// (decode_header, decode_frame, AckFrame::for_each_range). Input: the
// plaintext packet. Properties:
//   - an accepted header re-encodes to the input's 13 bytes;
//   - decode_frame always advances, and a frame it accepts round-trips
//     through its encoder (data, max_data, ping) to the same value;
//   - an ACK's ranges come out highest first, disjoint, not adjacent, never
//     below zero; put into a RangeSet and encoded again (encode_ack_frame,
//     room for all), they decode to exactly the same ranges and ack delay.
#include <vector>

#include "core/transport/range_set.hpp"
#include "core/transport/wire.hpp"
#include "fuzz_support.hpp"

using namespace braid;
using namespace braid::transport;

namespace {

std::vector<Range> ranges_of(const AckFrame& a, TransportError& err) {
  std::vector<Range> out;
  err = a.for_each_range([&](Range r) { out.push_back(r); });
  return out;
}

void check_ack(const AckFrame& a, size_t packet_size) {
  TransportError err;
  const std::vector<Range> rs = ranges_of(a, err);
  if (err != TransportError::ok) return;
  FUZZ_CHECK(rs.size() == a.extra_ranges + 1);
  for (size_t i = 0; i < rs.size(); ++i) {
    FUZZ_CHECK(rs[i].lo <= rs[i].hi);
    if (i > 0) FUZZ_CHECK(rs[i].hi + 1 < rs[i - 1].lo);  // a gap of at least one packet
  }
  FUZZ_CHECK(rs.front().hi == a.largest);

  RangeSet set;
  for (const Range& r : rs) set.insert(r.lo, r.hi);
  FUZZ_CHECK(set.range_count() == rs.size());
  // Minimal varints: the encoding is never longer than the packet it came in.
  std::vector<uint8_t> buf(packet_size + 16);
  ByteWriter w(buf);
  FUZZ_CHECK(encode_ack_frame(w, set, a.ack_delay, rs.size()) == rs.size());
  ByteReader r(std::span<const uint8_t>(buf.data(), w.written()));
  Frame f;
  FUZZ_CHECK(decode_frame(r, f) == TransportError::ok && f.type == FrameType::ack && r.empty());
  FUZZ_CHECK(f.ack.ack_delay == a.ack_delay && f.ack.largest == a.largest);
  TransportError err2;
  FUZZ_CHECK(ranges_of(f.ack, err2) == rs && err2 == TransportError::ok);
}

void check_data(const Frame& f) {
  FUZZ_CHECK(f.payload.size() == f.data.length);
  std::vector<uint8_t> buf(data_frame_overhead(f.data) + f.data.length);
  ByteWriter w(buf);
  const auto room = encode_data_frame(w, f.data);
  FUZZ_CHECK(room.size() == f.data.length && w.remaining() == 0);
  std::copy(f.payload.begin(), f.payload.end(), room.begin());
  ByteReader r(buf);
  Frame g;
  FUZZ_CHECK(decode_frame(r, g) == TransportError::ok && g.type == FrameType::data && r.empty());
  FUZZ_CHECK(g.data == f.data && std::equal(g.payload.begin(), g.payload.end(), f.payload.begin(), f.payload.end()));
}

void check_max_data(const Frame& f) {
  uint8_t buf[16];
  ByteWriter w(buf);
  FUZZ_CHECK(encode_max_data_frame(w, f.max_data));
  ByteReader r(std::span<const uint8_t>(buf, w.written()));
  Frame g;
  FUZZ_CHECK(decode_frame(r, g) == TransportError::ok && g.type == FrameType::max_data && g.max_data == f.max_data);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteReader r(fuzz::bytes_of(data, size));
  PacketHeader h;
  if (decode_header(r, h) != TransportError::ok) return 0;
  uint8_t again[kHeaderSize];
  ByteWriter w(again);
  FUZZ_CHECK(encode_header(w, h) && w.written() == kHeaderSize && std::equal(again, again + kHeaderSize, data));

  while (!r.empty()) {
    const size_t before = r.remaining();
    Frame f;
    if (decode_frame(r, f) != TransportError::ok) break;
    FUZZ_CHECK(r.remaining() < before);
    switch (f.type) {
      case FrameType::ack: check_ack(f.ack, size); break;
      case FrameType::data: check_data(f); break;
      case FrameType::max_data: check_max_data(f); break;
      default: break;
    }
  }
  return 0;
}
