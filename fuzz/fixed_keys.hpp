// The fixed lane keys the crypto targets open with, and their seed
// generator seals with: derived by the real derive_lane_keys from a constant
// lane secret, so a seed is a frame or datagram a real peer of that session
// could have sent. (Fuzzing looks for crashes and wrong acceptances, not for
// keys: a constant key is what makes valid seeds possible.)
#pragma once

#include <array>
#include <cstdint>

#include "engine/security/lane_keys.h"
#include "fuzz_support.hpp"

namespace braid::fuzz {

inline constexpr uint64_t kSessionId = 0x0123456789abcdefULL;
inline constexpr uint32_t kLaneId = 7;

inline const security::LaneKeys& fixed_lane_keys() {
  static const security::LaneKeys keys = [] {
    std::array<uint8_t, 32> bytes{};
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(0xa0 + i);
    auto k = security::derive_lane_keys(security::LaneSecret(bytes), kSessionId, kLaneId);
    if (!k) property_failed("derive_lane_keys failed", __FILE__, __LINE__);
    return k.value();
  }();
  return keys;
}

}  // namespace braid::fuzz
