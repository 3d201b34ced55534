// Test helpers: drive a Scheduler by hand, and a policy whose decisions are
// scripted by the test but whose rules come from a real policy.
#pragma once

#include <deque>
#include <memory>
#include <variant>
#include <vector>

#include "core/policy_registry.hpp"
#include "core/scheduler.hpp"

namespace braid::core::testing {

inline Time at_ms(int64_t ms) { return Time::zero() + Duration::millis(ms); }

/// Assigns exactly what the test queued, with the stall/estimator rules of `rules_of`.
class ScriptedPolicy final : public Policy {
 public:
  explicit ScriptedPolicy(std::string_view rules_of) : rules_(make_policy(rules_of)->rules()) {}
  std::string_view name() const override { return "scripted"; }
  PolicyRules rules() const override { return rules_; }
  std::optional<Pick> pick(const Scheduler&, Time) override {
    if (script_->empty()) return std::nullopt;
    Pick p = script_->front();
    script_->pop_front();
    return p;
  }
  std::shared_ptr<std::deque<Pick>> script() { return script_; }

 private:
  PolicyRules rules_;
  std::shared_ptr<std::deque<Pick>> script_ = std::make_shared<std::deque<Pick>>();
};

struct Drained {
  std::vector<Assign> assigns;
  std::vector<Cancel> cancels;
};

inline Drained drain(Scheduler& s, Time now) {
  Drained d;
  while (auto a = s.poll_action(now)) {
    if (auto* x = std::get_if<Assign>(&*a)) d.assigns.push_back(*x);
    if (auto* c = std::get_if<Cancel>(&*a)) d.cancels.push_back(*c);
  }
  return d;
}

}  // namespace braid::core::testing
