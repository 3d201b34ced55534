#include "core/policy_registry.hpp"

#include "core/policies/braid_policy.hpp"
#include "core/policies/ecf_policy.hpp"
#include "core/policies/seed_old_policy.hpp"
#include "core/policies/simple_policies.hpp"

namespace braid::core {

const std::vector<std::string_view>& policy_names() {
  static const std::vector<std::string_view> names{"braid", "ecf", "minrtt", "roundrobin", "queue", "seed-old"};
  return names;
}

std::unique_ptr<Policy> make_policy(std::string_view name) {
  if (name == "braid") return std::make_unique<BraidPolicy>();
  if (name == "ecf") return std::make_unique<EcfPolicy>();
  if (name == "minrtt") return std::make_unique<MinRttPolicy>();
  if (name == "roundrobin") return std::make_unique<RoundRobinPolicy>();
  if (name == "queue") return std::make_unique<QueuePolicy>();
  if (name == "seed-old") return std::make_unique<SeedOldPolicy>();
  return nullptr;
}

}  // namespace braid::core
