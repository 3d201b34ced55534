#include "cli/probe_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/code_option.hpp"
#include "cli/engine_report.hpp"
#include "cli/find_receiver.hpp"
#include "cli/path_config.hpp"
#include "cli/probe_plot.hpp"
#include "core/paths/probe.hpp"
#include "core/units_parse.hpp"
#include "engine/lanes/endpoint.hpp"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/sender_session.hpp"
#include "sim/scenario.hpp"
#include "sim/simulator.hpp"

namespace braid::cli {
namespace {

struct ProbeArgs {
  CodeArgs code;
  std::string name;
  int streams = 2;
  std::vector<std::string> backup, avoid;
  double seconds = 3;    // each phase
  std::string size = "256MiB";  // the transfer to predict
  std::string json_file, log_file, plot_file;
  std::string target;
};

// TCP's start-up and braid's first pieces are not the path's capacity: the
// rate is read after this much of each phase (a third of a short phase).
double ramp_for(double seconds) { return std::min(1.0, seconds / 3); }

[[noreturn]] void finish(int code, const std::string& msg) {
  if (!msg.empty()) std::cerr << "braid probe: " << msg << "\n";
  std::cout.flush();
  std::exit(code);
}

struct Phase {
  std::string label;
  std::vector<size_t> paths;
  transfer::ProbePhaseResult result;
};

std::string mbit(double bytes_per_second) { return fmt::format("{:.1f} Mbit/s", bytes_per_second * 8 / 1e6); }
// Sub-millisecond round trips (a cable, a LAN) keep two decimals.
std::string ms(double v) { return v < 0 ? "-" : v < 1 ? fmt::format("{:.2f} ms", v) : fmt::format("{:.1f} ms", v); }

// The simulator fed with what each path did alone: TCP's start (10
// segments, doubling per round trip) and its retransmission timer, as the
// netlab benchmark's prediction does (docs/benchmarks.md).
sim::Scenario scenario_of(const std::vector<paths::ProbedPath>& probed, Bytes size) {
  sim::Scenario sc;
  sc.name = "probe";
  sc.size = size;
  for (const auto& p : probed) {
    if (p.alone.rate_bps <= 0) continue;
    sim::LaneSpec l;
    l.name = p.name;
    l.rate = Rate::bytes_per_sec(p.alone.rate_bps);
    const double rtt_ms = p.idle_rtt_ms.value_or(std::max(0.1, p.alone.rtt_loaded_p50_ms));
    l.rtt = Duration::seconds_f(rtt_ms / 1000);
    l.initial_window = Bytes(14480);
    l.rto = Duration::millis(200) + l.rtt;
    sc.lanes.push_back(l);
  }
  return sc;
}

nlohmann::json figures_json(const paths::PathFigures& f) {
  return {{"rate_bytes_per_second", f.rate_bps},
          {"mbit_per_second", f.rate_bps * 8 / 1e6},
          {"rtt_loaded_p50_ms", f.rtt_loaded_p50_ms},
          {"rtt_loaded_p95_ms", f.rtt_loaded_p95_ms},
          {"loss", f.loss},
          {"bytes", f.bytes}};
}

void run_probe(const ProbeArgs& a) {
  using namespace transfer;
  if (auto why = check_new_label(a.name); !why.empty()) finish(kExitUsage, why);
  const std::optional<std::string> code = code_or_exit(a.code, "probe");
  if (!lanes::is_host_port(a.target))
    finish(kExitUsage, "'" + a.target + "' is not HOST[:PORT] (a port is a number from 1 to 65535), a pairing code or a paired peer's label");
  for (const auto& [flag, file] : {std::pair{"--json", a.json_file}, std::pair{"--log", a.log_file}, std::pair{"--plot", a.plot_file}})
    if (!file.empty())
      if (auto why = check_writable(file); !why.empty()) finish(kExitUsage, std::string(flag) + ": " + why);
  if (!a.plot_file.empty())
    if (auto why = plot_unavailable(); !why.empty()) finish(kExitUsage, why);
  const auto size = parse_size(a.size);
  if (!size || size->count() == 0) finish(kExitUsage, "bad --size '" + a.size + "' (e.g. 256MiB)");

  EventLog log;
  std::string error;
  if (!a.log_file.empty() && !log.open(a.log_file, error)) finish(kExitUsage, "--log: " + error);
  auto target = find_receiver(a.target, code, kBrowseSeconds);
  if (auto* f = std::get_if<Failure>(&target)) finish(f->exit_code, f->message);
  ConnectOptions co;
  co.code = std::get<SendTarget>(target).code;
  co.pin_label = a.name;
  co.peer_label = label_addressed(a.target);
  co.streams = a.streams;
  auto loaded = load_path_config(default_path_config_file());
  if (auto* e = std::get_if<PathConfigError>(&loaded)) finish(kExitUsage, e->message);
  PathConfig paths_config = std::get<PathConfig>(loaded);
  apply_flags(paths_config, a.backup, a.avoid, {});
  co.backup = paths_config.backup;
  co.avoid = paths_config.avoid;
  auto connected = connect_any(std::get<SendTarget>(target), co, log, "probe");
  if (auto* f = std::get_if<Failure>(&connected)) finish(f->exit_code, f->message);
  auto session = std::move(std::get<0>(connected));
  if (const auto& peer = session->peer(); peer.how == security::PeerAuth::paired)
    std::cerr << "braid probe: paired with '" << peer.name << "' (" << security::short_fingerprint(peer.fingerprint)
              << "); pinned in known_peers, no code needed next time (braid peers)" << std::endl;

  // Every path is measured: wait for their lanes (a dead one fails within the join timeout).
  session->wait_for_lanes(std::chrono::milliseconds(3000));
  const std::vector<ProbePath> found = session->probe_paths();
  if (found.empty()) finish(kExitLanesLost, "no TCP lane to the receiver is open: nothing to measure");
  const Duration length = Duration::seconds_f(a.seconds);
  std::vector<Phase> phases;
  for (size_t i = 0; i < found.size(); ++i) phases.push_back({found[i].interface + " alone", {i}, {}});
  if (found.size() > 1) {
    Phase all{"all paths", {}, {}};
    for (size_t i = 0; i < found.size(); ++i) all.paths.push_back(i);
    phases.push_back(std::move(all));
  }
  for (auto& ph : phases) {
    std::cerr << "braid probe: " << ph.label << " (" << a.seconds << " s)" << std::endl;
    ph.result = session->probe_phase(found, ph.paths, length);
    log.write("probe_phase", {{"phase", ph.label}, {"samples", ph.result.ticks.size()}, {"error", ph.result.error}});
    if (!ph.result.error.empty()) {
      session->close();
      finish(kExitLanesLost, ph.label + ": " + ph.result.error);
    }
  }
  session->close();

  const double ramp = ramp_for(a.seconds);
  std::vector<paths::ProbedPath> probed;
  for (size_t i = 0; i < found.size(); ++i) {
    paths::ProbedPath p;
    p.name = found[i].name;
    p.idle_rtt_ms = found[i].idle_rtt_ms;
    p.alone = paths::phase_figures(phases[i].result.ticks, i, ramp);
    p.together = found.size() > 1 ? paths::phase_figures(phases.back().result.ticks, i, ramp) : p.alone;
    probed.push_back(p);
  }

  // The prediction: the simulator over the measured paths.
  const sim::Scenario sc = scenario_of(probed, *size);
  std::optional<sim::RunResult> predicted;
  std::vector<std::string> idle;
  if (!sc.lanes.empty()) {
    predicted = sim::run(sc, "braid");
    std::vector<std::string> names;
    std::vector<uint64_t> bytes;
    for (const auto& l : predicted->lanes) {
      names.push_back(l.name);
      bytes.push_back(l.useful_bytes.count());
    }
    idle = paths::idle_paths(names, bytes);
  }

  // The table.
  size_t w = 4;
  for (const auto& p : probed) w = std::max(w, p.name.size());
  std::cout << fmt::format("{:<{}}  {:>5}  {:>9}  {:>14}  {:>19}  {:>11}  {:>6}  {:>14}\n", "path", w, "lanes",
                           "idle RTT", "alone", "loaded RTT p50/p95", "added p50", "loss", "all together");
  double sum_alone = 0, sum_together = 0;
  for (size_t i = 0; i < probed.size(); ++i) {
    const auto& p = probed[i];
    sum_alone += p.alone.rate_bps;
    sum_together += p.together.rate_bps;
    std::cout << fmt::format("{:<{}}  {:>5}  {:>9}  {:>14}  {:>19}  {:>11}  {:>6}  {:>14}\n", p.name, w,
                             found[i].lanes, p.idle_rtt_ms ? ms(*p.idle_rtt_ms) : "-", mbit(p.alone.rate_bps),
                             ms(p.alone.rtt_loaded_p50_ms) + " / " + ms(p.alone.rtt_loaded_p95_ms),
                             p.added_delay_p50_ms() < 0 ? "-" : "+" + ms(p.added_delay_p50_ms()),
                             fmt::format("{:.2f} %", p.alone.loss * 100), mbit(p.together.rate_bps));
  }
  if (probed.size() > 1)
    std::cout << fmt::format("{:<{}}  {:>5}  {:>9}  {:>14}  {:>19}  {:>11}  {:>6}  {:>14}\n", "sum", w, "", "",
                             mbit(sum_alone), "", "", "", mbit(sum_together));
  if (predicted) {
    const double secs = predicted->time.to_seconds();
    std::cout << fmt::format("prediction: {} over these paths in {:.2f} s ({}; fluid bound {:.2f} s)", format_size(*size),
                             secs, mbit(static_cast<double>(size->count()) / secs), sim::fluid_bound(sc).to_seconds());
    std::cout << (idle.empty() ? "; every path carries data\n" : "; left idle: ");
    for (size_t i = 0; i < idle.size(); ++i) std::cout << (i ? ", " : "") << idle[i] << (i + 1 == idle.size() ? "\n" : "");
  }
  std::cout.flush();

  if (!a.json_file.empty()) {
    nlohmann::json doc = {{"role", "probe"}, {"peer", session->peer_name()}, {"phase_seconds", a.seconds},
                          {"ramp_seconds", ramp}};
    nlohmann::json jp = nlohmann::json::array();
    for (size_t i = 0; i < probed.size(); ++i) {
      const auto& p = probed[i];
      jp.push_back({{"name", p.name},
                    {"interface", found[i].interface},
                    {"remote", found[i].remote},
                    {"lanes", found[i].lanes},
                    {"idle_rtt_ms", p.idle_rtt_ms ? nlohmann::json(*p.idle_rtt_ms) : nlohmann::json(nullptr)},
                    {"added_delay_p50_ms", p.added_delay_p50_ms()},
                    {"added_delay_p95_ms", p.added_delay_p95_ms()},
                    {"alone", figures_json(p.alone)},
                    {"together", figures_json(p.together)}});
    }
    doc["paths"] = jp;
    nlohmann::json jph = nlohmann::json::array();
    for (const auto& ph : phases) {
      nlohmann::json ticks = nlohmann::json::array();
      for (const auto& t : ph.result.ticks)
        ticks.push_back({{"t", t.t}, {"acked", t.acked}, {"srtt_ms", t.srtt_ms}, {"retrans", t.retrans}, {"segs_out", t.segs_out}});
      jph.push_back({{"label", ph.label}, {"paths", ph.paths}, {"ticks", ticks}});
    }
    doc["phases"] = jph;
    if (predicted)
      doc["prediction"] = {{"bytes", size->count()},
                           {"seconds", predicted->time.to_seconds()},
                           {"fluid_bound_seconds", sim::fluid_bound(sc).to_seconds()},
                           {"idle_paths", idle}};
    if (auto e = write_json_file(a.json_file, doc); !e.empty()) finish(kExitFailure, e);
  }

  if (!a.plot_file.empty()) {
    // The phases one after the other on one time axis; per path its
    // throughput over each 200 ms and its smoothed RTT while it carried data.
    std::vector<PlotSeries> series(found.size());
    std::vector<PlotPhase> bands;
    double offset = 0;
    for (size_t i = 0; i < found.size(); ++i) series[i].name = found[i].name;
    for (const auto& ph : phases) {
      const auto& ticks = ph.result.ticks;
      for (size_t i = 0; i < found.size(); ++i) {
        // A gap between phases (NaN) so that lines do not join across them.
        series[i].t.push_back(offset);
        series[i].mbit.push_back(NAN);
        series[i].rtt_ms.push_back(-1);
        for (size_t k = 2; k < ticks.size(); k += 2) {
          const double dt = ticks[k].t - ticks[k - 2].t;
          if (dt <= 0) continue;
          series[i].t.push_back(offset + ticks[k].t);
          series[i].mbit.push_back(static_cast<double>(ticks[k].acked[i] - ticks[k - 2].acked[i]) * 8 / dt / 1e6);
          series[i].rtt_ms.push_back(ticks[k].srtt_ms[i]);
        }
      }
      const double len = ticks.empty() ? a.seconds : ticks.back().t;
      bands.push_back({ph.label, offset, offset + len});
      offset += len + 0.2;
    }
    const std::string title = "braid probe to '" + session->peer_name() + "': each path alone, then all together";
    if (auto why = write_probe_plot(a.plot_file, title, series, bands); !why.empty()) finish(kExitFailure, why);
    std::cerr << "braid probe: plot written to " << a.plot_file << std::endl;
  }
  finish(0, "");
}

}  // namespace

void add_probe_command(CLI::App& app) {
  auto args = std::make_shared<ProbeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "probe", "Measure every path to a `braid recv` alone and together (capacity, delay, loss) and predict a transfer");
  add_code_options(cmd, args->code, "The pairing code the receiver printed (not needed once paired)");
  cmd->add_option("--name", args->name, "If this run pairs with the receiver, pin it under this label");
  cmd->add_option("--streams", args->streams, "Parallel lanes per path (default 2, as send)")->check(CLI::Range(1, 64));
  cmd->add_option("--backup", args->backup, "An interface send would keep as a backup (measured all the same)")
      ->allow_extra_args(false);
  cmd->add_option("--avoid", args->avoid, "An interface not to measure while any other reaches the receiver")
      ->allow_extra_args(false);
  cmd->add_option("--seconds", args->seconds, "How long each phase sends (default 3)")->check(CLI::Range(0.5, 60.0));
  cmd->add_option("--size", args->size, "The transfer to predict over the measured paths (default 256MiB)");
  cmd->add_option("--json", args->json_file, "Write every figure and sample as JSON to FILE");
  cmd->add_option("--log", args->log_file, "Write the activity log as JSON lines to FILE");
  cmd->add_option("--plot", args->plot_file, "Draw each path's throughput and RTT over time to FILE.png (gnuplot)");
  cmd->add_option("target", args->target, "CODE|LABEL|HOST[:PORT]")->required();
  cmd->callback([args] { run_probe(*args); });
}

}  // namespace braid::cli
