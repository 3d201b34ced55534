// The wire form of a sealed frame on a lane:
//
//   header (32 bytes, in the clear, authenticated as GCM associated data)
//     0  u8   version (1)
//     1  u8   type          (the engine's frame type; opaque here)
//     2  u8   direction     (1 client->server, 2 server->client)
//     3  u8   reserved, 0
//     4  u32  length        (payload bytes, big endian, <= kMaxFramePayload)
//     8  u64  session id    (big endian)
//    16  u32  lane id       (big endian)
//    20  u64  frame counter (big endian)
//    28  u32  reserved, 0
//   ciphertext (length bytes)
//   tag (16 bytes)
//
// Session, lane and counter travel in the clear so a receiver can tell a
// stale frame (older session, other lane, replay) from a forged one without
// trusting them: they are all authenticated, so a frame that lies about them
// still fails, and rejecting it changes no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "frame_status.h"
#include "lane_keys.h"

namespace braid::security {

constexpr std::size_t kFrameHeaderSize = 32;
constexpr std::size_t kFrameTagSize = 16;
constexpr std::size_t kFrameOverhead = kFrameHeaderSize + kFrameTagSize;
constexpr std::uint32_t kMaxFramePayload = 16u << 20;  // 16 MiB: far above a 1 MiB chunk
constexpr std::uint8_t kFrameVersion = 1;

struct FrameHeader {
  std::uint8_t type = 0;
  Direction direction = Direction::client_to_server;
  std::uint32_t length = 0;
  std::uint64_t session_id = 0;
  std::uint32_t lane_id = 0;
  std::uint64_t counter = 0;
};

constexpr std::size_t sealed_frame_size(std::uint32_t payload_length) { return kFrameOverhead + payload_length; }

void encode_frame_header(const FrameHeader& h, std::span<std::uint8_t, kFrameHeaderSize> out);

// Decodes and checks version, direction value, reserved bytes and length
// limit: FrameStatus::ok or FrameStatus::bad_header. The engine calls this
// on the first 32 bytes of a lane's stream to learn how much more to read:
// sealed_frame_size(header.length) in total.
FrameStatus decode_frame_header(std::span<const std::uint8_t, kFrameHeaderSize> in, FrameHeader& out);

}  // namespace braid::security
