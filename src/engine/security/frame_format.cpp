#include "frame_format.h"

namespace braid::security {
namespace {

void put_be(std::uint8_t* p, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) p[i] = static_cast<std::uint8_t>(v & 0xff);
}
std::uint64_t get_be(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string_view frame_status_name(FrameStatus s) {
  switch (s) {
    case FrameStatus::ok: return "ok";
    case FrameStatus::bad_header: return "bad_header";
    case FrameStatus::foreign_session: return "foreign_session";
    case FrameStatus::foreign_lane: return "foreign_lane";
    case FrameStatus::wrong_direction: return "wrong_direction";
    case FrameStatus::replayed: return "replayed";
    case FrameStatus::too_old: return "too_old";
    case FrameStatus::out_of_order: return "out_of_order";
    case FrameStatus::forged: return "forged";
    case FrameStatus::counter_exhausted: return "counter_exhausted";
    case FrameStatus::key_exhausted: return "key_exhausted";
    case FrameStatus::buffer_too_small: return "buffer_too_small";
  }
  return "unknown";
}

void encode_frame_header(const FrameHeader& h, std::span<std::uint8_t, kFrameHeaderSize> out) {
  std::uint8_t* p = out.data();
  p[0] = kFrameVersion;
  p[1] = h.type;
  p[2] = static_cast<std::uint8_t>(h.direction);
  p[3] = 0;
  put_be(p + 4, h.length, 4);
  put_be(p + 8, h.session_id, 8);
  put_be(p + 16, h.lane_id, 4);
  put_be(p + 20, h.counter, 8);
  put_be(p + 28, 0, 4);
}

FrameStatus decode_frame_header(std::span<const std::uint8_t, kFrameHeaderSize> in, FrameHeader& out) {
  const std::uint8_t* p = in.data();
  if (p[0] != kFrameVersion || p[3] != 0 || get_be(p + 28, 4) != 0) return FrameStatus::bad_header;
  if (p[2] != static_cast<std::uint8_t>(Direction::client_to_server) &&
      p[2] != static_cast<std::uint8_t>(Direction::server_to_client))
    return FrameStatus::bad_header;
  out.type = p[1];
  out.direction = static_cast<Direction>(p[2]);
  out.length = static_cast<std::uint32_t>(get_be(p + 4, 4));
  out.session_id = get_be(p + 8, 8);
  out.lane_id = static_cast<std::uint32_t>(get_be(p + 16, 4));
  out.counter = get_be(p + 20, 8);
  if (out.length > kMaxFramePayload) return FrameStatus::bad_header;
  return FrameStatus::ok;
}

}  // namespace braid::security
