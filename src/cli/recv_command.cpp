#include "cli/recv_command.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>

#include "cli/clean_command.hpp"
#include "cli/code_option.hpp"
#include "cli/engine_report.hpp"
#include "cli/recv_live.hpp"
#include "cli/signal_watch.hpp"
#include "core/units_parse.hpp"
#include "engine/discovery/discovery.hpp"
#include "engine/files/debris.hpp"
#include "engine/files/link_policy.hpp"
#include "engine/security/safe_path.h"
#include "engine/security/unique_fd.h"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/live_display.hpp"
#include "engine/transfer/receiver.hpp"

namespace braid::cli {
namespace {

struct RecvArgs {
  std::string dir = ".";  // recv with no --dir receives here, like scp and rsync into .
  std::vector<std::string> listen;
  CodeArgs code;
  std::string name;  // --name: the label to pin a sender that pairs under
  bool yes = false;
  bool once = false;
  size_t max_lanes = 64;
  size_t max_sessions = 16;
  std::string json_file;
  std::string log_file;
  std::string links = "safe";
  std::string clean_after = "7d";
  bool no_announce = false;
  bool quiet = false;    // -q: no live display, no summary tables
  bool verbose = false;  // -v: not on a terminal, a line per 10 %
};

[[noreturn]] void finish(int code, const std::string& msg) {
  if (!msg.empty()) std::cerr << "braid recv: " << msg << "\n";
  std::cout.flush();
  std::exit(code);
}

// The receiver SIGINT/SIGTERM interrupt (SignalWatch; null before it exists).
std::atomic<transfer::Receiver*> g_receiver{nullptr};

// The announcement on the local network (engine/discovery): started once
// the receiver listens; a new code (spent, retired) changes its number.
std::mutex g_announce_mu;
discovery::Announcer* g_announcer = nullptr;  // under g_announce_mu

}  // namespace

std::unique_ptr<discovery::Announcer> start_announcer(const transfer::Receiver& receiver, const std::string& who) {
  discovery::AnnounceConfig cfg;
  std::string error;
  auto host = transfer::LocalHost::load(std::nullopt, error);
  if (!host) {
    std::cerr << who + ": not announced on the local network: " << error << std::endl;
    return nullptr;
  }
  cfg.name = host->identity->name();
  cfg.fingerprint = host->identity->fingerprint().to_string();
  // The live code's number (a chosen code in that shape too): what the sender types first.
  cfg.rendezvous = discovery::rendezvous_of(receiver.code());
  for (const auto& ep : receiver.listening()) {
    if (ep.family() != AF_INET && ep.family() != AF_INET6) continue;
    if (ep.is_loopback()) continue;  // no network reaches it: nothing to announce there
    if (cfg.port == 0) cfg.port = ep.port();
    if (ep.port() != cfg.port) continue;  // one SRV, one port: the first listener's
    if (ep.is_wildcard()) {
      cfg.wildcard_v4 = true;  // [::] takes IPv4 too (listen_tcp: not V6ONLY)
      cfg.wildcard_v6 = cfg.wildcard_v6 || ep.family() == AF_INET6;
    } else {
      cfg.bound.push_back(ep.host());
    }
  }
  // Only Unix sockets or loopback addresses (as the tests' receivers): nothing to announce, nothing to say.
  if (cfg.port == 0 || (!cfg.wildcard_v4 && !cfg.wildcard_v6 && cfg.bound.empty())) return nullptr;
  auto announcer = discovery::Announcer::start(cfg, error);
  if (!announcer) {
    std::cerr << who + ": not announced on the local network: " << error << std::endl;
    return nullptr;
  }
  for (const auto& n : announcer->notes()) std::cerr << who + ": mDNS: " << n << std::endl;
  std::cerr << who + ": announced on the local network as '" << announcer->instance() << "'"
            << (cfg.rendezvous ? " with the number " + *cfg.rendezvous : std::string(" (the code has no number)"))
            << "; senders there can use the code alone (--no-announce to stay hidden)" << std::endl;
  return announcer;
}

// At start, before any session: what interrupted transfers left that no run
// resumed for `age` goes (files/debris.hpp; never a running transfer's).
void clean_target(const std::string& dir, std::chrono::seconds age, transfer::EventLog& log, const std::string& who) {
  security::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return;
  const files::DebrisResult r = files::clean_debris(fd.get(), files::DebrisOptions{age, false});
  for (const auto& e : r.removed)
    log.write("debris_removed", {{"path", transfer::json_safe(e.path)}, {"tag", e.tag}, {"bytes", e.bytes}});
  for (const auto& e : r.kept)
    log.write("debris_kept", {{"path", transfer::json_safe(e.path)}, {"tag", e.tag}, {"reason", e.why}});
  for (const auto& e : r.failed)
    std::cerr << who + ": cannot remove the leftover '" << security::printable_path(e.path) << "': " << e.why
              << "\n";
  if (!r.removed.empty())
    std::cerr << who + ": removed " << r.removed.size() << " leftover files (" << format_size(Bytes(r.removed_bytes)) << ") of "
              << r.removed_transfers << " interrupted transfers not resumed for " << files::format_age(age)
              << " (--clean-after)" << std::endl;
}

namespace {

void run_recv(const RecvArgs& a) {
  using namespace transfer;
  ::signal(SIGPIPE, SIG_IGN);
  // Before any thread: every thread inherits the blocked signals.
  SignalWatch::start([](int) {
    if (auto* r = g_receiver.load()) r->interrupt("interrupted");
  });
  // Output files before anything else: a report that cannot be written is a bad command line.
  for (const auto& [flag, file] : {std::pair{"--json", a.json_file}, std::pair{"--log", a.log_file}})
    if (!file.empty())
      if (auto why = check_writable(file); !why.empty()) finish(kExitUsage, std::string(flag) + ": " + why);
  if (auto why = check_new_label(a.name); !why.empty()) finish(kExitUsage, why);
  EventLog log;
  std::string error;
  if (!a.log_file.empty() && !log.open(a.log_file, error)) finish(kExitUsage, "--log: " + error);
  LiveDisplay display(LiveDisplay::mode_for(STDERR_FILENO, a.quiet, a.verbose));
  std::unique_ptr<RecvLive> live;  // set before run(): the first report comes after
  ReceiveOptions o;
  o.dir = a.dir;
  o.listen = a.listen;
  o.code = code_or_exit(a.code, "recv");
  o.pin_label = a.name;
  o.yes = a.yes;
  o.once = a.once;
  o.max_lanes = a.max_lanes;
  o.links = *files::parse_link_policy(a.links);  // checked by the option
  o.max_sessions = a.max_sessions;
  o.on_code_change = [](const std::string& code) {
    std::lock_guard lock(g_announce_mu);
    if (g_announcer) g_announcer->set_rendezvous(discovery::rendezvous_of(code));
  };
  // Each transfer's summary the moment it is verified, below its last frame.
  o.on_report = [&live, quiet = a.quiet](const TransferReport& r) {
    if (live) live->poll();
    if (!quiet && !r.lanes.empty()) std::cout << lane_table(r) << std::flush;
  };
  auto started = Receiver::start(o, log);
  if (auto* f = std::get_if<Failure>(&started)) finish(f->exit_code, f->message);
  auto receiver = std::move(std::get<0>(started));
  if (a.clean_after != "off") clean_target(a.dir, *files::parse_age(a.clean_after), log, "braid recv");
  std::cout << receiver->ready_line() << std::endl;
  std::unique_ptr<discovery::Announcer> announcer;
  if (!a.no_announce) announcer = start_announcer(*receiver, "braid recv");
  {
    std::lock_guard lock(g_announce_mu);
    g_announcer = announcer.get();
  }
  live = std::make_unique<RecvLive>(display, *receiver);
  g_receiver = receiver.get();
  if (SignalWatch::received()) receiver->interrupt("interrupted");  // came before the receiver existed
  int code = receiver->run();
  live->stop();
  const int sig = SignalWatch::received();
  if (sig) {
    code = SignalWatch::exit_code();
    log.write("status", {{"status", "interrupted"}, {"signal", SignalWatch::name(sig)}});
  }
  const auto reports = receiver->reports();  // the verified ones' tables are out already (on_report)
  if (!a.json_file.empty()) {
    nlohmann::json doc;
    doc["role"] = "recv";
    doc["exit_code"] = code;
    doc["status"] = sig ? "interrupted" : code == 0 ? "verified" : "failed";
    nlohmann::json transfers = nlohmann::json::array();
    bool all = !reports.empty();
    uint64_t moved = 0;
    for (const auto& r : reports) {
      transfers.push_back(to_json(r));
      all = all && r.verified;
      moved += transfer::moved_bytes(r);
    }
    doc["cpu"] = transfer::to_json(transfer::process_cpu_use(), moved);
    doc["transfers"] = transfers;
    doc["all_verified"] = all && code == 0;
    doc["rejected_frames"] = receiver->rejected_frames();
    doc["refused_connections"] = receiver->refused_connections();
    const ConnectionStats c = receiver->connection_stats();
    doc["connections"] = {{"accepted", c.accepted},
                          {"refused", c.refused},
                          {"closed_silent", c.closed_silent},
                          {"timed_out", c.timed_out},
                          {"dropped_pending_full", c.dropped_pending_full},
                          {"dropped_handshakes_full", c.dropped_handshakes_full},
                          {"shed_no_fd", c.shed_no_fd},
                          {"accept_pauses", c.accept_pauses},
                          {"sessions_refused", c.sessions_refused}};
    // Datagrams on the shared UDP ports that no lane took: stray, foreign or forged.
    nlohmann::json ports = nlohmann::json::array();
    for (const auto& [address, st] : receiver->udp_port_stats())
      ports.push_back({{"address", address},
                       {"dropped", st.dropped()},
                       {"malformed", st.malformed},
                       {"unknown_lane", st.unknown_lane},
                       {"foreign_source", st.foreign_source},
                       {"unauthenticated", st.unauthenticated},
                       {"migrated", st.migrated}});
    doc["udp_ports"] = ports;
    if (auto e = write_json_file(a.json_file, doc); !e.empty()) std::cerr << "braid recv: " << e << "\n";
  }
  g_receiver = nullptr;
  {
    std::lock_guard lock(g_announce_mu);
    g_announcer = nullptr;
  }
  announcer.reset();  // the goodbye: browsers forget this receiver at once
  receiver.reset();
  if (sig) {
    uint64_t held = 0;
    bool cut = false;  // a transfer was running
    for (const auto& r : reports)
      if (r.status == "interrupted") {
        cut = true;
        held += r.held_bytes;
      }
    finish(code, std::string("interrupted (") + SignalWatch::name(sig) + ")" +
                     (cut ? ": run the same send again to resume (" + format_size(Bytes(held)) +
                                " verified here are kept)"
                          : ""));
  }
  finish(code, "");
}

}  // namespace

void add_recv_command(CLI::App& app) {
  auto args = std::make_shared<RecvArgs>();
  CLI::App* cmd = app.add_subcommand("recv", "Receive files from `braid send` into a directory");
  cmd->add_option("-d,-o,--dir", args->dir, "Target directory (created if missing; default: the current directory)");
  cmd->add_option("--listen", args->listen, "ADDR:PORT to listen on, or unix:PATH for lanes over a Unix socket (repeatable; port 0 picks one; default [::]:7878)")
      ->allow_extra_args(false);
  add_code_options(cmd, args->code, "Use this pairing code instead of a fresh one (for scripts; a weak one is refused)");
  cmd->add_option("--name", args->name,
                  "Pin a sender that pairs under this label (default: the name it claims, made unique: vm, vm-2)");
  cmd->add_flag("-y,--yes", args->yes, "Accept every offer without asking");
  cmd->add_flag("--once", args->once, "Exit after one session");
  cmd->add_flag("--no-announce", args->no_announce,
                "Do not announce this receiver on the local network (DNS-SD over mDNS: its name, port, addresses, "
                "the code's public number and its key fingerprint; never the code's secret words)");
  cmd->add_option("--max-lanes", args->max_lanes, "Most lanes one session may have open at once (default 64)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--links", args->links,
                  "Symlinks the sender sends: keep (create all), safe (default: not those whose target is absolute "
                  "or leaves the target tree), skip (create none); those not created are reported")
      ->check(CLI::IsMember({"keep", "safe", "skip"}));
  cmd->add_option("--clean-after", args->clean_after,
                  "At start, remove what interrupted transfers left in DIR (.braid-* files) once no run resumed them "
                  "for this long (default 7d; off: never). A running transfer's are never touched")
      ->check([](const std::string& v) { return v == "off" ? std::string() : check_age(v); });
  cmd->add_option("--max-sessions", args->max_sessions,
                  "Most authenticated sessions served at once; one more is refused (default 16)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--json", args->json_file, "Write the final report as JSON to FILE");
  cmd->add_option("--log", args->log_file, "Write the activity log as JSON lines to FILE");
  cmd->add_flag("-q,--quiet", args->quiet, "No live display and no summary tables (errors still go to stderr)");
  cmd->add_flag("-v,--verbose", args->verbose,
                "When stderr is not a terminal, a progress line per 10 % (on a terminal the display is live)");
  cmd->callback([args] { run_recv(*args); });
}

}  // namespace braid::cli
