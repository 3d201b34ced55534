// Policies by name, as `--policy NAME` selects them.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "core/policy.hpp"

namespace braid::core {

/// Every registered policy name, braid's own first.
const std::vector<std::string_view>& policy_names();
/// A fresh policy, or nullptr for an unknown name.
std::unique_ptr<Policy> make_policy(std::string_view name);

}  // namespace braid::core
