// The discrete-event simulator behind `braid sim`: simulated lanes drive the
// real core::Scheduler through exactly the calls the engine makes
// (add_lane, on_send_started, on_written, on_ack, on_lane_closed, on_timeout,
// poll_action, poll_timeout). Deterministic for a given scenario seed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/units.hpp"
#include "sim/scenario.hpp"

namespace braid::sim {

struct LaneResult {
  std::string name;
  Bytes useful_bytes;    // delivered first by this lane
  uint32_t pieces = 0;   // pieces delivered first
  double share = 0;      // of all useful bytes
  uint32_t stalls = 0;
  uint32_t duplicates = 0;
  uint32_t abandoned = 0;
  Bytes wire_bytes;      // everything it put on the wire
  Rate final_estimate;
};

struct RunResult {
  std::string policy;
  bool completed = false;
  Duration time;             // until the sender held every ack
  uint32_t lost_chunks = 0;  // chunks the receiver never got whole
  uint32_t duplicates = 0;   // pieces that arrived more than once
  uint32_t stalls = 0;
  uint32_t abandoned = 0;
  Bytes duplicate_bytes;
  Bytes wasted_bytes;        // duplicates plus bytes of pieces dropped mid-send
  std::vector<LaneResult> lanes;
};

struct RunOptions {
  Duration time_limit = Duration::seconds(3600);
  /// Every decision and ack on stderr (`braid sim --trace`).
  bool trace = false;
};

/// Runs one policy over the scenario. Unknown policy names are the caller's
/// responsibility (see core::policy_names()).
RunResult run(const Scenario& scenario, std::string_view policy, RunOptions opts = {});

}  // namespace braid::sim
