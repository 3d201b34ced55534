#include "lane_keys.h"

#include <string>

#include "kdf.h"

namespace braid::security {
namespace {

Status derive(const LaneSecret& secret, std::string_view label, std::uint64_t session_id, std::uint32_t lane_id,
              std::span<std::uint8_t> out) {
  std::string info(label);
  for (int shift = 56; shift >= 0; shift -= 8) info += static_cast<char>((session_id >> shift) & 0xff);
  for (int shift = 24; shift >= 0; shift -= 8) info += static_cast<char>((lane_id >> shift) & 0xff);
  return hkdf_sha256(secret.span(), as_bytes("braid lane keys v1"), as_bytes(info), out);
}

}  // namespace

Result<LaneKeys> derive_lane_keys(const LaneSecret& lane_secret, std::uint64_t session_id, std::uint32_t lane_id) {
  LaneKeys keys;
  // Labels name the direction, so the two directions never share a key.
  for (Status s : {derive(lane_secret, "braid c2s key", session_id, lane_id, keys.client_to_server.key.span()),
                   derive(lane_secret, "braid c2s nonce salt", session_id, lane_id, keys.client_to_server.nonce_salt.span()),
                   derive(lane_secret, "braid s2c key", session_id, lane_id, keys.server_to_client.key.span()),
                   derive(lane_secret, "braid s2c nonce salt", session_id, lane_id, keys.server_to_client.nonce_salt.span())})
    if (!s) return s.error();
  return keys;
}

}  // namespace braid::security
