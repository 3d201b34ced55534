// Baselines with no end-of-transfer logic, sharing braid's estimator and stall rules:
//  * `queue`: a plain shared queue, one piece in flight per lane: whoever is
//    free takes the next piece (WDT's model).
//  * `roundrobin`: lanes take turns; a lane whose pipe is full is skipped.
//  * `minrtt`: MPTCP's default: the lowest-RTT lane with room in its pipe.
#pragma once

#include "core/policy.hpp"

namespace braid::core {

class QueuePolicy final : public Policy {
 public:
  std::string_view name() const override { return "queue"; }
  std::optional<Pick> pick(const Scheduler& s, Time now) override;
};

class RoundRobinPolicy final : public Policy {
 public:
  std::string_view name() const override { return "roundrobin"; }
  std::optional<Pick> pick(const Scheduler& s, Time now) override;

 private:
  LaneId next_ = 0;
};

class MinRttPolicy final : public Policy {
 public:
  std::string_view name() const override { return "minrtt"; }
  std::optional<Pick> pick(const Scheduler& s, Time now) override;
};

}  // namespace braid::core
