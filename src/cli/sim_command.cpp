#include "cli/sim_command.hpp"

#include <iostream>

#include "cli/sim_report.hpp"
#include "core/policy_registry.hpp"
#include "core/units_parse.hpp"
#include "sim/simulator.hpp"

namespace braid::cli {
namespace {

struct SimArgs {
  std::string size = "256MiB";
  std::string chunk = "1MiB";
  uint64_t seed = 1;
  std::string policy = "all";
  bool json = false;
  std::string scenario_file;
  std::vector<std::string> lanes;
  std::vector<std::string> events;
};

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
  std::vector<sim::RunResult> runs;
  for (auto p : policies) runs.push_back(sim::run(sc, p));
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
  cmd->add_option("--scenario", args->scenario_file, "Scenario file (see scenarios/)");
  cmd->add_option("--lane", args->lanes, "NAME:rate=RATE,rtt=TIME[,hint=RATE][,jitter=TIME][,loss=P][,ackloss=P][,sndbuf=SIZE][,iw=SIZE][,noise=F][,frame=SIZE]");
  cmd->add_option("--event", args->events, "at=TIME,lane=NAME,(rate=RATE|down|up|gone)");
  cmd->callback([args, cmd] { run_sim(*args, *cmd); });
}

}  // namespace braid::cli
