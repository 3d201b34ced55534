#include "cli/sim_report.hpp"

#include <fmt/format.h>

#include "core/units_parse.hpp"

namespace braid::cli {
namespace {

struct Reference {
  double bound_s;
  double best_single_s;
  double first_lane_s;  // the seed's table is "speed-up over USB alone": the first lane
};

Reference reference(const sim::Scenario& sc) {
  Reference r{sim::fluid_bound(sc).to_seconds(), 0, sim::fluid_bound_single(sc, 0).to_seconds()};
  r.best_single_s = r.first_lane_s;
  for (size_t i = 1; i < sc.lanes.size(); ++i)
    r.best_single_s = std::min(r.best_single_s, sim::fluid_bound_single(sc, i).to_seconds());
  // A lane that dies before it could finish alone has no "alone" time.
  const double never = Duration::infinite().to_seconds() / 2;
  if (r.first_lane_s > never) r.first_lane_s = std::numeric_limits<double>::quiet_NaN();
  return r;
}

}  // namespace

nlohmann::json sim_json(const sim::Scenario& sc, const std::vector<sim::RunResult>& runs) {
  const Reference ref = reference(sc);
  nlohmann::json out;
  out["scenario"] = sc.name;
  out["size_bytes"] = sc.size.count();
  out["chunk_bytes"] = sc.chunk.count();
  out["seed"] = sc.seed;
  out["bound_s"] = ref.bound_s;
  out["best_single_lane_s"] = ref.best_single_s;
  out["policies"] = nlohmann::json::array();
  for (const auto& r : runs) {
    const double t = r.completed ? r.time.to_seconds() : std::numeric_limits<double>::infinity();
    nlohmann::json p;
    p["name"] = r.policy;
    p["completed"] = r.completed;
    p["time_s"] = r.completed ? nlohmann::json(t) : nlohmann::json(nullptr);
    p["fraction_of_bound"] = r.completed ? ref.bound_s / t : 0.0;
    p["speedup_vs_best_lane"] = r.completed ? ref.best_single_s / t : 0.0;
    p["lost_chunks"] = r.lost_chunks;
    p["duplicate_chunks"] = r.duplicates;
    p["duplicate_bytes"] = r.duplicate_bytes.count();
    p["wasted_bytes"] = r.wasted_bytes.count();
    p["stalls"] = r.stalls;
    p["abandoned"] = r.abandoned;
    p["lanes"] = nlohmann::json::array();
    for (const auto& l : r.lanes) {
      p["lanes"].push_back({{"name", l.name},
                            {"chunks", l.pieces},
                            {"bytes", l.useful_bytes.count()},
                            {"share", l.share},
                            {"stalls", l.stalls},
                            {"duplicates", l.duplicates},
                            {"abandoned", l.abandoned},
                            {"wire_bytes", l.wire_bytes.count()},
                            {"final_estimate_bps", l.final_estimate.bits_per_second()}});
    }
    out["policies"].push_back(p);
  }
  return out;
}

std::string sim_table(const sim::Scenario& sc, const std::vector<sim::RunResult>& runs) {
  const Reference ref = reference(sc);
  const std::string first = sc.lanes.front().name;
  std::string out = fmt::format("{} in {} chunks over {} lane(s), seed {}\n", format_size(sc.size),
                                format_size(sc.chunk), sc.lanes.size(), sc.seed);
  for (const auto& l : sc.lanes)
    out += fmt::format("  lane {:<10} {:>14}  rtt {:>7.1f} ms{}\n", l.name, format_rate(l.rate), l.rtt.to_millis(),
                       l.hint ? "  hint " + format_rate(*l.hint) : std::string());
  out += fmt::format("\n{:<12} {:>9} {:>8} {:>9} {:>5} {:>7} {:>6} {:>5}  {}\n", "policy", "time s",
                     "x " + first, "of bound", "dups", "stalls", "aband", "lost", "share per lane");
  out += fmt::format("{:<12} {:>9.3f} {:>8.2f} {:>9.3f}\n", "bound", ref.bound_s, ref.first_lane_s / ref.bound_s, 1.0);
  for (const auto& r : runs) {
    std::string shares;
    for (const auto& l : r.lanes) shares += fmt::format("{} {:.1f}%  ", l.name, l.share * 100);
    if (!r.completed) {
      out += fmt::format("{:<12} {:>9} {:>8} {:>9} {:>5} {:>7} {:>6} {:>5}  {}\n", r.policy, "never", "-", "-",
                         r.duplicates, r.stalls, r.abandoned, r.lost_chunks, shares);
      continue;
    }
    const double t = r.time.to_seconds();
    out += fmt::format("{:<12} {:>9.3f} {:>8.2f} {:>9.3f} {:>5} {:>7} {:>6} {:>5}  {}\n", r.policy, t,
                       ref.first_lane_s / t, ref.bound_s / t, r.duplicates, r.stalls, r.abandoned, r.lost_chunks,
                       shares);
  }
  return out;
}

}  // namespace braid::cli
