#include "cli/sim_command.hpp"

#include <iostream>

#include "cli/sim_report.hpp"
#include "core/policy_registry.hpp"
#include "core/units_parse.hpp"
#include "sim/session_sim.hpp"
#include "sim/simulator.hpp"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

namespace braid::cli {
namespace {

struct SimArgs {
  std::string size = "256MiB";
  std::string chunk = "1MiB";
  uint64_t seed = 1;
  std::string policy = "all";
  bool json = false;
  bool trace = false;
  std::string scenario_file;
  std::vector<std::string> lanes;
  std::vector<std::string> events;
  bool session = false;
};

// `--session`: the whole session — the real sender and receiver machines,
// offer, joins, acks, done and result, lanes that die and come back —
// over the scenario's lanes, one lane per path (the first carries the
// bootstrap lane). A lane `gone` is a path that goes away for good; `down`
// and `up` a path that goes and comes back (the lane is found dead after 1 s,
// as keepalive would, and opened again once the path is back).
sim::SessionScenario session_scenario(const sim::Scenario& sc, std::string_view policy) {
  sim::SessionScenario s;
  s.size = sc.size;
  s.chunk = sc.chunk;
  s.policy = std::string(policy);
  for (const auto& l : sc.lanes) s.paths.push_back(sim::SimPath{l.name, session::LaneKind::tcp, l.rate, l.rtt, 1, false});
  s.sender.no_lane_grace = Duration::seconds(30);
  for (const auto& e : sc.events) {
    sim::PathEvent pe;
    pe.at = e.at;
    pe.path = e.lane;
    pe.rate = e.rate;
    pe.kind = e.kind == sim::EventKind::rate ? sim::PathEvent::Kind::rate
              : e.kind == sim::EventKind::up ? sim::PathEvent::Kind::up
                                             : sim::PathEvent::Kind::down;
    s.events.push_back(pe);
  }
  return s;
}

void run_session_sim(const sim::Scenario& sc, const std::vector<std::string_view>& policies, bool json) {
  const double bound = sim::fluid_bound(sc).to_seconds();
  nlohmann::json out = {{"scenario", sc.name}, {"bound_s", bound}, {"runs", nlohmann::json::array()}};
  if (!json) std::printf("%-12s %9s %9s  %s\n", "policy", "time s", "of bound", "bytes per path (MiB)");
  bool all_done = true;
  for (auto p : policies) {
    const auto r = sim::run_session(session_scenario(sc, p));
    const bool done = !r.transfers.empty() && r.transfers[0].ended && r.transfers[0].outcome.verified();
    all_done = all_done && done;
    const double t = done ? (r.transfers[0].ended_at - r.transfers[0].offered_at).to_seconds() : -1;
    std::map<std::string, uint64_t> per_path;
    for (const auto& l : r.lanes) per_path[l.path] += l.delivered;
    nlohmann::json run = {{"policy", std::string(p)}, {"completed", done}, {"time_s", t},
                          {"of_bound", done && t > 0 ? bound / t : 0.0}, {"paths", per_path}};
    out["runs"].push_back(run);
    if (json) continue;
    std::string paths;
    for (const auto& [name, b] : per_path) paths += name + " " + std::to_string(b >> 20) + "  ";
    if (done) std::printf("%-12s %9.3f %9.3f  %s\n", std::string(p).c_str(), t, bound / t, paths.c_str());
    else std::printf("%-12s %9s %9s  %s\n", std::string(p).c_str(), "failed", "-", r.transfers.empty() ? "" : r.transfers[0].outcome.message.c_str());
  }
  if (json) std::cout << out.dump(2) << "\n";
  if (!all_done) std::exit(3);
}

[[noreturn]] void fail(const std::string& msg) {
  std::cerr << "braid sim: " << msg << "\n";
  std::exit(2);
}

void run_sim(const SimArgs& a, const CLI::App& cmd) {
  sim::Scenario sc;
  if (!a.scenario_file.empty()) {
    if (auto e = sim::load_scenario_file(a.scenario_file, sc); !e.empty()) fail(e);
  }
  // Command-line options override (or add to) the scenario file.
  if (cmd.count("--size") || a.scenario_file.empty()) {
    auto b = parse_size(a.size);
    if (!b) fail("bad --size '" + a.size + "' (e.g. 256MiB, 1GB)");
    sc.size = *b;
  }
  if (cmd.count("--chunk") || a.scenario_file.empty()) {
    auto b = parse_size(a.chunk);
    if (!b) fail("bad --chunk '" + a.chunk + "' (e.g. 1MiB)");
    sc.chunk = *b;
  }
  if (cmd.count("--seed") || a.scenario_file.empty()) sc.seed = a.seed;
  for (const auto& l : a.lanes) {
    sim::LaneSpec spec;
    if (auto e = sim::parse_lane(l, spec); !e.empty()) fail(e);
    sc.lanes.push_back(spec);
  }
  for (const auto& ev : a.events) {
    sim::EventSpec spec;
    if (auto e = sim::parse_event(ev, spec); !e.empty()) fail(e);
    sc.events.push_back(spec);
  }
  if (auto e = sim::validate(sc); !e.empty()) fail(e);

  std::vector<std::string_view> policies;
  if (a.policy == "all") {
    policies = core::policy_names();
  } else {
    if (!core::make_policy(a.policy)) {
      std::string names;
      for (auto n : core::policy_names()) names += std::string(n) + " ";
      fail("unknown --policy '" + a.policy + "' (one of: " + names + "all)");
    }
    policies.push_back(a.policy);
  }
  if (a.session) return run_session_sim(sc, policies, a.json);
  std::vector<sim::RunResult> runs;
  for (auto p : policies) runs.push_back(sim::run(sc, p, sim::RunOptions{.trace = a.trace}));
  if (a.json) {
    std::cout << sim_json(sc, runs).dump(2) << "\n";
  } else {
    std::cout << sim_table(sc, runs);
  }
  for (const auto& r : runs)
    if (!r.completed) std::exit(3);
}

}  // namespace

void add_sim_command(CLI::App& app) {
  auto args = std::make_shared<SimArgs>();
  CLI::App* cmd = app.add_subcommand("sim", "Simulate a transfer over modelled lanes with each scheduling policy");
  cmd->add_option("--size", args->size, "Bytes to transfer (256MiB, 1GB, ...)");
  cmd->add_option("--chunk", args->chunk, "Chunk size, 64KiB to 64MiB");
  cmd->add_option("--seed", args->seed, "Random seed (jitter, loss)");
  cmd->add_option("--policy", args->policy, "braid|ecf|minrtt|roundrobin|queue|seed-old|all");
  cmd->add_flag("--json", args->json, "Print one JSON object instead of a table");
  cmd->add_flag("--trace", args->trace, "Every scheduling decision and ack on stderr (piece-level simulator)");
  cmd->add_flag("--session", args->session,
                "Run the whole session (the real sender and receiver machines) over the lanes, not the scheduler alone");
  cmd->add_option("--scenario", args->scenario_file, "Scenario file (see scenarios/)");
  cmd->add_option("--lane", args->lanes, "NAME:rate=RATE,rtt=TIME[,hint=RATE][,jitter=TIME][,loss=P][,ackloss=P][,sndbuf=SIZE][,iw=SIZE][,noise=F][,frame=SIZE][,rto=TIME]");
  cmd->add_option("--event", args->events, "at=TIME,lane=NAME,(rate=RATE|down|up|gone)");
  cmd->callback([args, cmd] { run_sim(*args, *cmd); });
}

}  // namespace braid::cli
