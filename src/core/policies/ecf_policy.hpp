// `ecf`: the seed's fixed scheduler (MISSION.md §1), kept as a baseline.
// A shared queue with one piece in flight per lane; a lane that is not the
// fastest may take a piece only if it will deliver it before the fastest lane
// could send everything that is left (earliest completion first, from
// multipath-TCP research). The same rule governs pieces back from a stall and
// end-of-transfer duplicates. Whole chunks only.
#pragma once

#include "core/policy.hpp"

namespace braid::core {

class EcfPolicy final : public Policy {
 public:
  std::string_view name() const override { return "ecf"; }
  std::optional<Pick> pick(const Scheduler& s, Time now) override;
};

}  // namespace braid::core
