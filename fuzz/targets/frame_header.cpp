// The sealed frame header (security::decode_frame_header), which the engine
// decodes from the first 32 clear bytes of a lane's stream to learn how much
// more to read. Input: the header bytes (shorter inputs are zero-padded, so
// every prefix is tried as well). Properties: an accepted header has a
// known version and direction, zero reserved bytes and a length within
// kMaxFramePayload; it is canonical (encode gives back exactly the input);
// a rejected one is bad_header.
#include <array>
#include <cstring>

#include "engine/security/frame_format.h"
#include "fuzz_support.hpp"

using namespace braid::security;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::array<uint8_t, kFrameHeaderSize> in{};
  std::memcpy(in.data(), data, std::min(size, in.size()));
  FrameHeader h;
  const FrameStatus s = decode_frame_header(in, h);
  if (s != FrameStatus::ok) {
    FUZZ_CHECK(s == FrameStatus::bad_header);
    return 0;
  }
  FUZZ_CHECK(h.length <= kMaxFramePayload);
  FUZZ_CHECK(h.direction == Direction::client_to_server || h.direction == Direction::server_to_client);
  FUZZ_CHECK(sealed_frame_size(h.length) == kFrameOverhead + h.length);
  std::array<uint8_t, kFrameHeaderSize> out{};
  encode_frame_header(h, out);
  FUZZ_CHECK(out == in);
  return 0;
}
