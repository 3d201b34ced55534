#include "core/transport/wire.hpp"

#include <algorithm>

namespace braid::transport {

namespace {
constexpr uint8_t kFixedBits = 0x40;  // lets a peer tell lane packets from stray bytes
}

bool encode_header(ByteWriter& w, const PacketHeader& h) {
  return w.put_u8(static_cast<uint8_t>(kFixedBits | static_cast<uint8_t>(h.kind))) &&
         w.put_be(h.lane_id, 4) && w.put_be(h.packet_number, 8);
}

TransportError decode_header(ByteReader& r, PacketHeader& h) {
  const uint8_t first = r.u8();
  h.lane_id = static_cast<uint32_t>(r.be(4));
  h.packet_number = r.be(8);
  if (!r.ok()) return TransportError::truncated;
  if ((first & 0xc0) != kFixedBits || (first & 0x3f) > 1) return TransportError::wrong_packet_kind;
  h.kind = static_cast<PacketKind>(first & 0x3f);
  return TransportError::ok;
}

size_t data_frame_overhead(const DataRange& d) {
  return 1 + varint_size(d.piece) + varint_size(d.offset) + varint_size(d.length);
}

std::span<uint8_t> encode_data_frame(ByteWriter& w, const DataRange& d) {
  if (w.remaining() < data_frame_overhead(d) + d.length) return {};
  w.put_u8(static_cast<uint8_t>(FrameType::data));
  w.put_varint(d.piece);
  w.put_varint(d.offset);
  w.put_varint(d.length);
  return w.reserve(d.length);
}

bool encode_ping_frame(ByteWriter& w) { return w.put_u8(static_cast<uint8_t>(FrameType::ping)); }

bool encode_max_data_frame(ByteWriter& w, Bytes limit) {
  if (w.remaining() < 1 + varint_size(limit.count())) return false;
  return w.put_u8(static_cast<uint8_t>(FrameType::max_data)) && w.put_varint(limit.count());
}

size_t encode_ack_frame(ByteWriter& w, const RangeSet& received, Duration ack_delay,
                        size_t max_ranges) {
  const auto& rs = received.ranges();
  if (rs.empty() || max_ranges == 0) return 0;
  const Range top = rs.back();
  // A varint carries at most 2^62 - 1 (RFC 9000 §16): a packet number above
  // that (only a misbehaving peer sends one) cannot be acknowledged. Every
  // other field is smaller than top.hi, so this one check covers them all.
  if (top.hi > kVarintMax) return 0;
  const uint64_t delay_us = static_cast<uint64_t>(std::max<int64_t>(0, ack_delay.ns() / 1000));
  // Count how many further ranges fit before writing, so the count is exact.
  size_t fixed = 1 + varint_size(top.hi) + varint_size(delay_us) + varint_size(top.hi - top.lo);
  size_t extra = 0, extra_bytes = 0;
  for (size_t i = rs.size() - 1; i > 0 && extra + 1 < max_ranges; --i) {
    const uint64_t gap = rs[i].lo - rs[i - 1].hi - 2;
    const uint64_t len = rs[i - 1].hi - rs[i - 1].lo;
    const size_t n = varint_size(gap) + varint_size(len);
    if (fixed + varint_size(extra + 1) + extra_bytes + n > w.remaining()) break;
    extra_bytes += n;
    ++extra;
  }
  if (fixed + varint_size(extra) + extra_bytes > w.remaining()) return 0;
  w.put_u8(static_cast<uint8_t>(FrameType::ack));
  w.put_varint(top.hi);
  w.put_varint(delay_us);
  w.put_varint(extra);
  w.put_varint(top.hi - top.lo);
  for (size_t k = 0, i = rs.size() - 1; k < extra; ++k, --i) {
    w.put_varint(rs[i].lo - rs[i - 1].hi - 2);
    w.put_varint(rs[i - 1].hi - rs[i - 1].lo);
  }
  return extra + 1;
}

TransportError decode_frame(ByteReader& r, Frame& f) {
  const uint8_t type = r.u8();
  if (!r.ok()) return TransportError::truncated;
  switch (static_cast<FrameType>(type)) {
    case FrameType::padding:
      f.type = FrameType::padding;
      r.rest();
      return TransportError::ok;
    case FrameType::ping:
      f.type = FrameType::ping;
      return TransportError::ok;
    case FrameType::ack: {
      f.type = FrameType::ack;
      f.ack.largest = r.varint();
      f.ack.ack_delay = Duration::micros(static_cast<int64_t>(r.varint() & 0xffffffffffULL));
      f.ack.extra_ranges = r.varint();
      f.ack.first_range = r.varint();
      if (!r.ok()) return TransportError::truncated;
      // Walk the (gap, length) pairs once to find where the frame ends.
      const auto start = r.peek_rest();
      const size_t before = r.remaining();
      for (uint64_t i = 0; i < f.ack.extra_ranges; ++i) {
        r.varint();
        r.varint();
        if (!r.ok()) return TransportError::truncated;
      }
      f.ack.range_bytes = start.first(before - r.remaining());
      return TransportError::ok;
    }
    case FrameType::data: {
      f.type = FrameType::data;
      f.data.piece = r.varint();
      f.data.offset = r.varint();
      const uint64_t len = r.varint();
      if (!r.ok() || len > r.remaining()) return TransportError::truncated;
      f.data.length = static_cast<uint32_t>(len);
      f.payload = r.bytes(len);
      return TransportError::ok;
    }
    case FrameType::max_data:
      f.type = FrameType::max_data;
      f.max_data = Bytes(r.varint());
      return r.ok() ? TransportError::ok : TransportError::truncated;
    default:
      break;
  }
  return TransportError::unknown_frame;
}

}  // namespace braid::transport
