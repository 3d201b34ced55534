// Per-lane AEAD keys. Every lane gets its own AES-256-GCM key and nonce salt
// for each direction, derived with HKDF-SHA256 from the session's lane secret
// (a TLS exporter value, see Session::lane_secret), the session id and the
// lane id. Both ends derive the same LaneKeys; each seals with the keys of its
// sending direction and opens with the other.
#pragma once

#include <cstdint>

#include "result.h"
#include "secret.h"

namespace braid::security {

// The TLS client opens the session (in braid: the sender); the server
// accepts it (the receiver).
enum class Role : std::uint8_t { client, server };

enum class Direction : std::uint8_t { client_to_server = 1, server_to_client = 2 };

constexpr Direction sending_direction(Role r) {
  return r == Role::client ? Direction::client_to_server : Direction::server_to_client;
}
constexpr Direction receiving_direction(Role r) {
  return r == Role::client ? Direction::server_to_client : Direction::client_to_server;
}

constexpr std::size_t kAeadKeySize = 32;    // AES-256
constexpr std::size_t kNonceSize = 12;      // GCM's 96-bit nonce
using LaneSecret = Secret<32>;

struct DirectionKeys {
  Secret<kAeadKeySize> key;
  Secret<kNonceSize> nonce_salt;  // XORed with the frame counter to make each nonce
};

struct LaneKeys {
  DirectionKeys client_to_server;
  DirectionKeys server_to_client;

  const DirectionKeys& for_direction(Direction d) const {
    return d == Direction::client_to_server ? client_to_server : server_to_client;
  }
};

// HKDF-SHA256(ikm = lane_secret, salt = "braid lane keys v1",
//             info = "braid <c2s|s2c> <key|nonce salt>" || session_id (8 bytes BE) || lane_id (4 bytes BE)).
Result<LaneKeys> derive_lane_keys(const LaneSecret& lane_secret, std::uint64_t session_id, std::uint32_t lane_id);

}  // namespace braid::security
