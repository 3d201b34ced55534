// `seed-old`: the seed's original push rules, reproduced with their faults so
// tests can show each fault and that braid does not have it (MISSION.md §1):
//  * a fixed starting hint (the lane's hint, else 400 Mbit/s) — and chunks
//    pushed to a lane before any ack has measured it;
//  * the stall deadline counts from hand-out and is capped at 3 s (shorter
//    than one 1 MiB Bluetooth chunk at 1.5 Mbit/s);
//  * a stall tells every lane to drop the chunk, the replacement included;
//  * late acks after a stall are ignored by the estimator;
//  * rate samples run from the socket-write completion to the ack, guarded
//    only against a zero interval (1 µs).
#pragma once

#include "core/policy.hpp"

namespace braid::core {

class SeedOldPolicy final : public Policy {
 public:
  /// Chunks pushed ahead into one lane.
  static constexpr size_t kPushWindow = 4;

  std::string_view name() const override { return "seed-old"; }
  PolicyRules rules() const override;
  std::optional<Pick> pick(const Scheduler& s, Time now) override;
};

}  // namespace braid::core
