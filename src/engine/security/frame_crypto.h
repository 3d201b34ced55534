// Sealing and opening lane frames with AES-256-GCM. Pure: no I/O, no clock,
// no allocation per frame (the EVP context and its key schedule are set up
// once per lane and direction and reused; only the nonce changes).
//
// Nonce = nonce_salt XOR (0^32 || counter as 64-bit big endian), as in
// TLS 1.3 (RFC 8446 §5.3); the counter starts at 0 and only goes up, so a
// nonce is never reused under one key. Associated data = the 32-byte frame
// header, which binds session id, lane id, direction, counter, type and
// length (frame_format.h).
//
// Not thread-safe: one sealer and one opener per lane and direction, each
// used by one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "frame_format.h"
#include "frame_status.h"
#include "lane_keys.h"
#include "ossl.h"
#include "replay_window.h"
#include "result.h"

namespace braid::security {

// Usage limits of one key. The byte limit keeps AES-GCM's confidentiality
// advantage under 2^-57 (draft-irtf-cfrg-aead-limits: about 2^36 16-byte
// blocks, i.e. 1 TiB, per key); past it the engine opens a new lane (new
// lane id, new keys).
struct SealLimits {
  std::uint64_t max_frames = UINT64_MAX;  // counters 0 .. max_frames-1 (so never 2^64-1)
  std::uint64_t max_bytes = std::uint64_t{1} << 40;
};

class FrameSealer {
 public:
  static Result<FrameSealer> create(const DirectionKeys& keys, std::uint64_t session_id, std::uint32_t lane_id,
                                    Direction direction, SealLimits limits = {});

  // Writes header || ciphertext || tag of `payload` into `out`, which must
  // hold sealed_frame_size(payload.size()) bytes. `payload` may sit exactly
  // at out.subspan(kFrameHeaderSize, payload.size()) to seal in place;
  // otherwise it must not overlap `out`. On any status but ok nothing is
  // consumed: the counter does not move.
  FrameStatus seal(std::uint8_t type, std::span<const std::uint8_t> payload, std::span<std::uint8_t> out);

  std::uint64_t next_counter() const { return next_counter_; }
  std::uint64_t bytes_sealed() const { return bytes_sealed_; }

 private:
  FrameSealer() = default;
  ossl::CipherCtx ctx_;
  Secret<kNonceSize> salt_;
  std::uint64_t session_id_ = 0;
  std::uint32_t lane_id_ = 0;
  Direction direction_ = Direction::client_to_server;
  SealLimits limits_;
  std::uint64_t next_counter_ = 0;
  std::uint64_t bytes_sealed_ = 0;
};

// Which counters an opener accepts.
enum class Ordering : std::uint8_t {
  strict,  // exactly the next counter (ordered lanes: TCP)
  window,  // any fresh counter within a ReplayWindow (unordered lanes: UDP)
};

struct OpenedFrame {
  std::uint8_t type = 0;
  std::uint64_t counter = 0;
  std::uint32_t length = 0;  // plaintext bytes written to the output buffer
};

class FrameOpener {
 public:
  static Result<FrameOpener> create(const DirectionKeys& keys, std::uint64_t session_id, std::uint32_t lane_id,
                                    Direction direction, Ordering ordering = Ordering::strict);

  // Checks and decrypts one whole sealed frame (header || ciphertext || tag)
  // into `out` (at least header.length bytes; may be exactly
  // frame.subspan(kFrameHeaderSize) to open in place). Returns ok and fills
  // `opened`, or the reason for rejecting it; a rejected frame changes
  // nothing but the statistics, and its output bytes must not be used.
  FrameStatus open(std::span<const std::uint8_t> frame, std::span<std::uint8_t> out, OpenedFrame& opened);
  // The same, with the plaintext split: its first head.size() bytes go to
  // `head`, the rest to `tail` (at least header.length - head.size() bytes),
  // so a frame's body can land straight where it belongs (a piece buffer)
  // while its small leading header lands elsewhere. Either part may be the
  // frame's own body at the same offset (in place); a frame shorter than
  // `head` is rejected as too small for the buffers.
  FrameStatus open_split(std::span<const std::uint8_t> frame, std::span<std::uint8_t> head,
                         std::span<std::uint8_t> tail, OpenedFrame& opened);

  // How many frames ended with each status (index: FrameStatus value).
  const std::array<std::uint64_t, kFrameStatusCount>& stats() const { return stats_; }
  std::uint64_t count(FrameStatus s) const { return stats_[static_cast<std::size_t>(s)]; }

 private:
  FrameOpener() = default;
  FrameStatus open_impl(std::span<const std::uint8_t> frame, std::span<std::uint8_t> head, std::span<std::uint8_t> tail,
                        OpenedFrame& opened);

  ossl::CipherCtx ctx_;
  Secret<kNonceSize> salt_;
  std::uint64_t session_id_ = 0;
  std::uint32_t lane_id_ = 0;
  Direction direction_ = Direction::client_to_server;
  Ordering ordering_ = Ordering::strict;
  std::uint64_t next_counter_ = 0;  // strict mode
  ReplayWindow window_;             // window mode
  std::array<std::uint64_t, kFrameStatusCount> stats_{};
};

}  // namespace braid::security
