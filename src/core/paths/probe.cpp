#include "core/paths/probe.hpp"

#include <algorithm>
#include <cmath>

namespace braid::paths {

namespace {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(at)), hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

}  // namespace

PathFigures phase_figures(const std::vector<ProbeTick>& ticks, size_t path, double ramp) {
  PathFigures f;
  if (ticks.empty() || path >= ticks.back().acked.size()) return f;
  const ProbeTick& last = ticks.back();
  f.bytes = last.acked[path];
  // From the first sample at or after the ramp to the last: what was acked
  // over that time. A phase too short for a ramp is read whole, from its
  // start (t = 0, nothing acked).
  size_t from = 0;
  while (from < ticks.size() && ticks[from].t < ramp) ++from;
  const bool whole = from + 1 >= ticks.size();
  const double base_t = whole ? 0.0 : ticks[from].t;
  const uint64_t base_bytes = whole ? 0 : ticks[from].acked[path];
  if (whole) from = 0;
  const double span = last.t - base_t;
  if (span > 0) f.rate_bps = static_cast<double>(last.acked[path] - base_bytes) / span;
  std::vector<double> rtts;
  for (size_t i = from; i < ticks.size(); ++i)
    if (ticks[i].srtt_ms[path] >= 0) rtts.push_back(ticks[i].srtt_ms[path]);
  f.rtt_loaded_p50_ms = percentile(rtts, 0.50);
  f.rtt_loaded_p95_ms = percentile(rtts, 0.95);
  if (last.segs_out[path] > 0)
    f.loss = static_cast<double>(last.retrans[path]) / static_cast<double>(last.segs_out[path]);
  return f;
}

double ProbedPath::added_delay_p50_ms() const {
  if (!idle_rtt_ms || alone.rtt_loaded_p50_ms < 0) return -1;
  return std::max(0.0, alone.rtt_loaded_p50_ms - *idle_rtt_ms);
}

double ProbedPath::added_delay_p95_ms() const {
  if (!idle_rtt_ms || alone.rtt_loaded_p95_ms < 0) return -1;
  return std::max(0.0, alone.rtt_loaded_p95_ms - *idle_rtt_ms);
}

std::vector<std::string> idle_paths(const std::vector<std::string>& names, const std::vector<uint64_t>& predicted_bytes,
                                    double min_share) {
  uint64_t total = 0;
  for (uint64_t b : predicted_bytes) total += b;
  std::vector<std::string> out;
  for (size_t i = 0; i < names.size() && i < predicted_bytes.size(); ++i)
    if (total == 0 || static_cast<double>(predicted_bytes[i]) < min_share * static_cast<double>(total))
      out.push_back(names[i]);
  return out;
}

}  // namespace braid::paths
