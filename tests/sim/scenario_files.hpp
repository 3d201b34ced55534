#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "sim/scenario.hpp"

namespace braid::sim::testing {

inline Scenario load(const std::string& name) {
  std::ifstream in(std::string(BRAID_SOURCE_DIR) + "/scenarios/" + name + ".scn");
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  Scenario sc;
  EXPECT_EQ(parse_scenario_file(text.str(), sc), "");
  EXPECT_EQ(validate(sc), "");
  return sc;
}

}  // namespace braid::sim::testing
