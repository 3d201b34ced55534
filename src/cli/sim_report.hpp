// The reports of `braid sim`: a table like the seed's, or one JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/scenario.hpp"
#include "sim/simulator.hpp"

namespace braid::cli {

nlohmann::json sim_json(const sim::Scenario& sc, const std::vector<sim::RunResult>& runs);
std::string sim_table(const sim::Scenario& sc, const std::vector<sim::RunResult>& runs);

}  // namespace braid::cli
