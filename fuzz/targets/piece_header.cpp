// The piece header at the start of every piece_data payload
// (wire::decode_piece_header, both overloads). Input: a piece_data payload
// (72-byte header, then data); when it is longer than the header, its last
// 8 bytes also serve as an arbitrary data length for the second overload
// (the receiver's path that opens a frame's data straight into a piece
// buffer). Properties, for every header accepted:
//   - the frame's data lies inside the piece, without overflow (checked in
//     128-bit arithmetic), and the last frame ends exactly at the piece's end
//     (unless compressed: then after decompression) with a hash of 16 or 32
//     bytes; other frames carry no hash; no flag but last and compressed;
//   - both overloads agree on the same bytes;
//   - encode → decode gives the same header, and the encoding is the input
//     except for the two reserved bytes (which the decoder ignores).
#include <cstring>

#include "core/wire/messages.hpp"
#include "fuzz_support.hpp"

using namespace braid::wire;
using u128 = unsigned __int128;

namespace {

bool same(const PieceHeader& a, const PieceHeader& b) {
  return a.transfer_id == b.transfer_id && a.piece == b.piece && a.chunk == b.chunk && a.flags == b.flags &&
         a.piece_offset == b.piece_offset && a.piece_length == b.piece_length && a.data_offset == b.data_offset &&
         a.hash == b.hash;
}

void accepted(const PieceHeader& h, std::span<const uint8_t> header, size_t data_length) {
  const u128 piece_end = u128{h.piece_offset} + h.piece_length;
  FUZZ_CHECK(piece_end <= UINT64_MAX);
  FUZZ_CHECK(h.data_offset >= h.piece_offset);
  FUZZ_CHECK(u128{h.data_offset} + data_length <= piece_end);
  if (h.last()) {
    // A compressed frame's data is a zstd frame: where its file bytes end is
    // known once decompressed (the receiver checks the piece's end then).
    if (!h.compressed()) FUZZ_CHECK(u128{h.data_offset} + data_length == piece_end);
    FUZZ_CHECK(h.hash.size == 16 || h.hash.size == 32);
  } else {
    FUZZ_CHECK(h.hash.size == 0);
  }
  FUZZ_CHECK((h.flags & ~(PieceHeader::kLast | PieceHeader::kCompressed)) == 0);

  std::array<uint8_t, PieceHeader::kSize> out{};
  encode_piece_header(h, out);
  std::array<uint8_t, PieceHeader::kSize> in{};
  std::memcpy(in.data(), header.data(), PieceHeader::kSize);
  in[14] = in[15] = 0;
  FUZZ_CHECK(out == in);
  PieceHeader back;
  FUZZ_CHECK(decode_piece_header(out, data_length, back));
  FUZZ_CHECK(same(back, h));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> payload(data, size);
  PieceHeader h1;
  size_t n = 0;
  const bool ok1 = decode_piece_header(payload, h1, n);
  if (ok1) {
    FUZZ_CHECK(n == size - PieceHeader::kSize);
    accepted(h1, payload, n);
  }
  if (size < PieceHeader::kSize) return 0;
  PieceHeader h2;
  const bool ok2 = decode_piece_header(payload.first(PieceHeader::kSize), size - PieceHeader::kSize, h2);
  FUZZ_CHECK(ok1 == ok2);
  if (ok2) FUZZ_CHECK(same(h1, h2));

  if (size >= PieceHeader::kSize + 8) {
    uint64_t len = 0;
    for (size_t i = size - 8; i < size; ++i) len = (len << 8) | data[i];
    PieceHeader h3;
    if (decode_piece_header(payload, static_cast<size_t>(len), h3)) accepted(h3, payload, static_cast<size_t>(len));
  }
  return 0;
}
