// What happened to one frame. Returned by value on the data path (no
// exceptions, no allocation), and counted by the opener.
#pragma once

#include <cstdint>
#include <string_view>

namespace braid::security {

enum class FrameStatus : std::uint8_t {
  ok = 0,
  // Opening: the frame is rejected; the opener's state is unchanged.
  bad_header,       // malformed header or length (the stream's framing is broken)
  foreign_session,  // sealed for another session (e.g. stale bytes of an older one)
  foreign_lane,     // sealed for another lane of this session
  wrong_direction,  // our own direction: a reflected frame
  replayed,         // counter already accepted
  too_old,          // (window mode) counter fell behind the replay window
  out_of_order,     // (strict mode) counter skips ahead of the next expected one
  forged,           // authentication failed: corrupted or forged
  // Sealing: nothing was written.
  counter_exhausted,  // the frame counter limit of this key is reached
  key_exhausted,      // the byte limit of this key is reached (AEAD usage limit)
  // Either: the caller's buffer is too small or the payload too large.
  buffer_too_small,
};
inline constexpr std::size_t kFrameStatusCount = static_cast<std::size_t>(FrameStatus::buffer_too_small) + 1;

// Short stable name, e.g. "foreign_session".
std::string_view frame_status_name(FrameStatus s);

// The lane policy the engine follows: stale or foreign frames are dropped and
// counted and the lane goes on (MISSION.md: stale bytes must not stall a
// session); anything that means the lane's stream can no longer be trusted
// (forged, broken framing, reflection, a gap on an ordered lane) closes it.
constexpr bool frame_status_closes_lane(FrameStatus s) {
  return s == FrameStatus::bad_header || s == FrameStatus::wrong_direction || s == FrameStatus::out_of_order ||
         s == FrameStatus::forged;
}

}  // namespace braid::security
