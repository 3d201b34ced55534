#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sim/scenario.hpp"

namespace braid::sim::testing {

/// A shipped scenario (scenarios/NAME.scn), checked valid.
inline Scenario load(const std::string& name) {
  Scenario sc;
  EXPECT_EQ(load_scenario_file(std::string(BRAID_SOURCE_DIR) + "/scenarios/" + name + ".scn", sc), "");
  EXPECT_EQ(validate(sc), "");
  return sc;
}

/// gtest parameter names may not contain '-'.
inline std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (auto& c : n)
    if (c == '-') c = '_';
  return n;
}

}  // namespace braid::sim::testing
