// Wire format of a UDP lane packet: a 13-byte header, then frames, then room
// for the 16-byte AES-GCM tag the sealer appends. Pure encode/decode into
// caller buffers; nothing allocates.
//
//   byte 0      0x40 | kind         (kind: 0 = data packet sender→receiver,
//                                          1 = feedback packet receiver→sender)
//   bytes 1-4   lane id, big-endian
//   bytes 5-12  packet number, big-endian; never reused within a lane and
//               direction, so it can be the AES-GCM nonce counter
//   frames...   (QUIC-style types and varints, RFC 9000 §16 and §19)
//   16 bytes    AEAD tag (appended by the sealer, not by this code)
//
// AAD the sealer is expected to authenticate: session id (from the handshake,
// never on the wire) || these 13 header bytes (so lane id, packet kind and
// packet number are bound). Nonce: the packet number plus direction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/transport/byte_cursor.hpp"
#include "core/transport/range_set.hpp"
#include "core/transport/transport_error.hpp"
#include "core/units.hpp"

namespace braid::transport {

inline constexpr size_t kHeaderSize = 13;
inline constexpr size_t kAeadTagSize = 16;
/// The smallest packet size a lane accepts (MISSION §2: 1200 to 9000 bytes).
inline constexpr size_t kMinDatagramSize = 1200;
inline constexpr size_t kMaxDatagramSize = 9000;

enum class PacketKind : uint8_t { data = 0, feedback = 1 };

struct PacketHeader {
  PacketKind kind = PacketKind::data;
  uint32_t lane_id = 0;
  uint64_t packet_number = 0;
};

enum class FrameType : uint8_t {
  padding = 0x00,   // fills the rest of the packet
  ping = 0x01,      // ack-eliciting, no content (a PTO probe with nothing to resend)
  ack = 0x02,       // acknowledged packet-number ranges and the ack delay
  data = 0x03,      // a range of a piece (chunk) of the transfer
  max_data = 0x04,  // flow-control limit: total new data bytes the sender may send
};

/// A range of the transfer: `length` bytes at `offset` within piece `piece`.
struct DataRange {
  uint64_t piece = 0;
  uint64_t offset = 0;
  uint32_t length = 0;
  bool operator==(const DataRange&) const = default;
};

/// A decoded ACK frame; the ranges stay encoded and are walked on demand.
struct AckFrame {
  uint64_t largest = 0;
  Duration ack_delay;
  uint64_t first_range = 0;              // packets [largest - first_range, largest]
  uint64_t extra_ranges = 0;             // count of (gap, length) pairs that follow
  std::span<const uint8_t> range_bytes;  // the encoded pairs

  /// Calls f(Range) for each acknowledged range, highest first. Returns
  /// bad_ack_range / bad_varint if the encoding is inconsistent.
  template <class F>
  TransportError for_each_range(F&& f) const;
};

// --- header -----------------------------------------------------------------

bool encode_header(ByteWriter& w, const PacketHeader& h);
TransportError decode_header(ByteReader& r, PacketHeader& h);

// --- frames (encoders return false if the frame does not fit) ---------------

/// Bytes a DATA frame header takes before its payload.
size_t data_frame_overhead(const DataRange& d);
/// Writes the DATA frame header and reserves the payload; returns the payload
/// span for the caller to fill (empty on failure).
std::span<uint8_t> encode_data_frame(ByteWriter& w, const DataRange& d);
bool encode_ping_frame(ByteWriter& w);
bool encode_max_data_frame(ByteWriter& w, Bytes limit);
/// Encodes up to `max_ranges` of the highest ranges of `received` that fit;
/// returns how many ranges went in (0 = nothing written, also when the
/// highest value is beyond kVarintMax and so cannot be encoded).
size_t encode_ack_frame(ByteWriter& w, const RangeSet& received, Duration ack_delay,
                        size_t max_ranges);

/// A frame as the decoder sees it.
struct Frame {
  FrameType type = FrameType::padding;
  AckFrame ack;                       // valid when type == ack
  DataRange data;                     // valid when type == data
  std::span<const uint8_t> payload;   // valid when type == data
  Bytes max_data;                     // valid when type == max_data
};

/// Decodes the next frame; the reader is advanced past it. PADDING consumes
/// the rest of the packet.
TransportError decode_frame(ByteReader& r, Frame& f);

// --- template implementation ------------------------------------------------

template <class F>
TransportError AckFrame::for_each_range(F&& f) const {
  if (first_range > largest) return TransportError::bad_ack_range;
  uint64_t hi = largest;
  uint64_t lo = largest - first_range;
  f(Range{lo, hi});
  ByteReader r(range_bytes);
  for (uint64_t i = 0; i < extra_ranges; ++i) {
    const uint64_t gap = r.varint();
    const uint64_t len = r.varint();
    if (!r.ok()) return TransportError::bad_varint;
    // RFC 9000 §19.3.1: next largest = previous smallest - gap - 2.
    if (lo < gap + 2) return TransportError::bad_ack_range;
    hi = lo - gap - 2;
    if (hi < len) return TransportError::bad_ack_range;
    lo = hi - len;
    f(Range{lo, hi});
  }
  return TransportError::ok;
}

}  // namespace braid::transport
