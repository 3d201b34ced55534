// The simulator's scenario files (sim::parse_scenario_file, then validate
// and the fluid bounds `braid sim` prints beside each run). Input: the file's
// text. Properties: a failure says why (and which line); a scenario that
// parses has lanes with a positive rate, probabilities in [0, 1) and no
// negative time; one that validates has fluid bounds that are never
// negative, and the bound with every lane is no later than the bound with
// any one lane alone (give or take rounding: a microsecond, or 1e-9).
#include <algorithm>
#include <cmath>
#include <string>

#include "sim/scenario.hpp"
#include "fuzz_support.hpp"

using namespace braid;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  sim::Scenario s;
  const std::string err = sim::parse_scenario_file(text, s);
  if (!err.empty()) {
    FUZZ_CHECK(err.rfind("line ", 0) == 0);
    return 0;
  }
  for (const auto& l : s.lanes) {
    FUZZ_CHECK(!l.name.empty() && !l.rate.is_zero() && std::isfinite(l.rate.bytes_per_second()));
    FUZZ_CHECK(l.rtt.ns() >= 0 && l.jitter.ns() >= 0);
    FUZZ_CHECK(l.loss >= 0 && l.loss < 1 && l.ack_loss >= 0 && l.ack_loss < 1 && l.rate_noise >= 0 && l.rate_noise < 1);
  }
  for (const auto& e : s.events) FUZZ_CHECK(e.at.ns() >= 0 && !e.lane.empty());
  if (!sim::validate(s).empty()) return 0;
  // Each bound walks every event over every lane, once for all lanes and
  // once per lane: keep the work per input small.
  if (s.lanes.size() * s.lanes.size() * (s.events.size() + 1) > (1u << 14)) return 0;
  const Duration all = sim::fluid_bound(s);
  FUZZ_CHECK(all.ns() >= 0);
  for (size_t i = 0; i < s.lanes.size(); ++i) {
    const Duration one = sim::fluid_bound_single(s, i);
    FUZZ_CHECK(one.ns() >= 0);
    const double slack = std::max(1e3, 1e-9 * static_cast<double>(one.ns()));
    FUZZ_CHECK(static_cast<double>(all.ns()) <= static_cast<double>(one.ns()) + slack);
  }
  return 0;
}
