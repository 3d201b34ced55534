// Sealing and opening one UDP lane datagram with AES-256-GCM.
//
// The security module's FrameSealer has its own 32-byte header and frame
// counter, made for byte streams; a datagram already carries a 13-byte
// header with a never-reused packet number (core/transport/wire.hpp), so it
// is sealed here directly with OpenSSL EVP, using the same per-lane keys
// (security::derive_lane_keys) and the same nonce rule as FrameSealer:
//
//   nonce = nonce_salt XOR (0^32 || packet number, 64-bit big endian)
//   AAD   = session id (8 bytes big endian, never on the wire) || 13 header bytes
//   datagram = header (clear) || frames (encrypted in place) || 16-byte tag
//
// Each direction has its own key and salt, so the data packets of one end
// and the feedback packets of the other never share a nonce. The opener
// checks the clear header (kind, lane), then the replay window
// (security::ReplayWindow, RFC 4303 §3.4.3 style), then the tag; only a
// datagram that authenticated moves the window, so forgeries change nothing.
//
// No allocation per datagram: the EVP contexts keep their key schedule and
// only take a new nonce. Not thread-safe: one sealer and one opener per lane
// end, each used by the lane's I/O thread.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "core/transport/wire.hpp"
#include "engine/security/frame_status.h"
#include "engine/security/lane_keys.h"
#include "engine/security/ossl.h"
#include "engine/security/replay_window.h"
#include "engine/security/result.h"

namespace braid::udp {

using security::FrameStatus;

/// AES-GCM usage limit per key and direction, as the security module's
/// SealLimits (draft-irtf-cfrg-aead-limits: ~2^36 blocks); past it the lane
/// closes and the engine opens a new one (new lane id, new keys).
inline constexpr uint64_t kMaxSealedBytesPerKey = uint64_t{1} << 40;

class DatagramSealer {
 public:
  /// `keys`: the direction this end sends in (security::sending_direction(role)).
  static security::Result<DatagramSealer> create(const security::DirectionKeys& keys, uint64_t session_id);

  /// Encrypts packet[kHeaderSize, size) in place and writes the tag at
  /// packet[size, size + 16). The packet number is read from the header.
  /// Returns ok, buffer_too_small (packet.size() < size + 16 or size below a
  /// header) or key_exhausted.
  FrameStatus seal(std::span<uint8_t> packet, size_t size) { return seal(packet, size, {}); }

  /// Bytes the packet carries that live elsewhere (a piece held for resends).
  struct Gathered {
    size_t offset_in_packet = 0;
    std::span<const uint8_t> bytes;
  };
  /// As seal(), but each of `gathered` (in packet order, not overlapping,
  /// inside [kHeaderSize, size)) is encrypted from where it lives straight
  /// into packet[offset_in_packet, + bytes.size()): one pass over the file
  /// bytes instead of a copy into the packet and a pass over the copy. The
  /// packet's own bytes in those places are neither read nor kept.
  /// buffer_too_small also if `gathered` breaks those rules.
  FrameStatus seal(std::span<uint8_t> packet, size_t size, std::span<const Gathered> gathered);

  uint64_t bytes_sealed() const { return bytes_sealed_; }

 private:
  DatagramSealer() = default;
  security::ossl::CipherCtx ctx_;
  security::Secret<security::kNonceSize> salt_;
  std::array<uint8_t, 8> session_{};
  uint64_t bytes_sealed_ = 0;
};

/// What the opener expects of every datagram it accepts.
struct OpenerExpect {
  transport::PacketKind kind = transport::PacketKind::data;
  uint32_t lane_id = 0;
};

class DatagramOpener {
 public:
  /// `keys`: the peer's sending direction (security::receiving_direction(role)).
  static security::Result<DatagramOpener> create(const security::DirectionKeys& keys, uint64_t session_id,
                                                 OpenerExpect expect);

  /// Checks and decrypts `datagram` in place. On ok the plaintext packet is
  /// datagram.first(datagram.size() - 16) (header + frames). Statuses:
  /// bad_header (too short, not a braid header), wrong_direction (a packet
  /// of our own kind: reflected), foreign_lane, replayed, too_old, forged.
  /// A rejected datagram changes nothing but the counts — and not those
  /// with `count` false (a shared port trying a datagram on each of several
  /// lanes that wait for their peer: a refusal there is not news for the lane).
  FrameStatus open(std::span<uint8_t> datagram, bool count = true);

  const std::array<uint64_t, security::kFrameStatusCount>& stats() const { return stats_; }
  uint64_t count(FrameStatus s) const { return stats_[static_cast<size_t>(s)]; }
  /// Datagrams rejected for any reason.
  uint64_t rejected() const;
  /// The highest packet number accepted so far (0 before any).
  uint64_t highest_accepted() const { return window_.highest(); }

 private:
  DatagramOpener() = default;
  FrameStatus open_impl(std::span<uint8_t> datagram);

  security::ossl::CipherCtx ctx_;
  security::Secret<security::kNonceSize> salt_;
  std::array<uint8_t, 8> session_{};
  OpenerExpect expect_;
  security::ReplayWindow window_;
  std::array<uint64_t, security::kFrameStatusCount> stats_{};
};

}  // namespace braid::udp
