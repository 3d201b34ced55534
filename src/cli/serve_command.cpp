#include "cli/serve_command.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <memory>
#include <mutex>

#include "cli/recv_command.hpp"
#include "cli/signal_watch.hpp"
#include "core/units_parse.hpp"
#include "engine/files/debris.hpp"
#include "engine/files/link_policy.hpp"
#include "engine/security/files.h"
#include "engine/security/fingerprint.h"
#include "engine/security/known_peers.h"
#include "engine/security/unique_fd.h"
#include "engine/serve/control_socket.hpp"
#include "engine/serve/dashboard.hpp"
#include "engine/serve/history.hpp"
#include "engine/serve/live_sampler.hpp"
#include "engine/serve/offer_board.hpp"
#include "engine/serve/send_view.hpp"
#include "engine/serve/serve_api.hpp"
#include "engine/serve/share_server.hpp"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/receiver.hpp"

namespace braid::cli {
namespace {

[[noreturn]] void finish(int code, const std::string& msg) {
  if (!msg.empty()) std::cerr << "braid serve: " << msg << "\n";
  std::cout.flush();
  std::exit(code);
}

struct ServeArgs {
  ServeLocation where;
  bool foreground = false;
  std::vector<std::string> share;  // --share PATH…
  std::string upload;              // --upload DIR
};

std::atomic<transfer::Receiver*> g_receiver{nullptr};
std::mutex g_announce_mu;
discovery::Announcer* g_announcer = nullptr;  // under g_announce_mu

int64_t unix_now() { return static_cast<int64_t>(std::time(nullptr)); }

std::optional<uint64_t> free_bytes(const std::string& dir) {
  struct statvfs st{};
  if (::statvfs(dir.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

// Without --foreground: the process forks once the config is read; the
// parent waits until the child says it is ready (the lines it would print)
// or has failed, prints that, and exits with its verdict. The child goes on
// in a session of its own, its output appended to STATE_DIR/serve.log.
// Returns the pipe to report readiness on (-1 in the foreground).
int go_to_background(const std::filesystem::path& log_file) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) finish(transfer::kExitFailure, "pipe: " + security::errno_text(errno));
  const pid_t pid = ::fork();
  if (pid < 0) finish(transfer::kExitFailure, "fork: " + security::errno_text(errno));
  if (pid > 0) {
    ::close(fds[1]);
    std::string said;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) said.append(buf, static_cast<size_t>(n));
    // The child writes "OK\n" then its lines once ready; anything else (or nothing) is a failure it also logged.
    if (said.rfind("OK\n", 0) == 0) {
      std::cout << said.substr(3) << "braid serve: running in the background as pid " << pid << " (log: "
                << log_file.string() << ")" << std::endl;
      std::exit(0);
    }
    std::cerr << "braid serve: failed to start; see " << log_file.string() << std::endl;
    std::exit(transfer::kExitFailure);
  }
  ::close(fds[0]);
  ::setsid();
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int log = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (null >= 0) ::dup2(null, STDIN_FILENO);
  if (log >= 0) {
    ::dup2(log, STDOUT_FILENO);
    ::dup2(log, STDERR_FILENO);
  }
  return fds[1];
}

// known_peers is read afresh for each request: `braid peers rename` in a
// shell, or a pairing, changes it under serve.
std::optional<security::KnownPeers> load_known_peers(std::string& error) {
  auto dir = security::default_config_dir();
  if (!dir) {
    error = dir.error().message;
    return std::nullopt;
  }
  auto known = security::KnownPeers::load_in(dir.value());
  if (!known) {
    error = known.error().message;
    return std::nullopt;
  }
  return std::move(known.value());
}

nlohmann::json pinned_peers() {
  nlohmann::json out = nlohmann::json::array();
  std::string error;
  auto known = load_known_peers(error);
  if (!known) return out;
  for (const auto& e : known->entries())
    out.push_back({{"label", e.label}, {"key", security::short_fingerprint(e.fingerprint)}, {"paired", e.paired},
                   {"host", e.host}});
  return out;
}

std::string edit_peer(const std::string& which, const std::string& to) {
  std::string error;
  auto known = load_known_peers(error);
  if (!known) return error;
  if (to.empty()) {
    auto r = known->forget(which);
    if (!r) return r.error().message;
    std::cerr << "braid serve: forgot the peer '" << r.value().label << "' (dashboard)" << std::endl;
    return {};
  }
  auto r = known->relabel(which, to);
  if (!r) return r.error().message;
  std::cerr << "braid serve: renamed the peer '" << which << "' to '" << to << "' (dashboard)" << std::endl;
  return {};
}

// The browser share, when --share, --upload or the config's [share] asks for one.
std::optional<serve::ShareOptions> share_options(const serve::ServeConfig& cfg, const ServeArgs& a) {
  serve::ShareOptions o;
  for (const auto& p : a.share.empty() ? cfg.share_paths : a.share) o.paths.emplace_back(p);
  o.upload_dir = a.upload.empty() ? cfg.share_upload_dir : a.upload;
  if (o.paths.empty() && o.upload_dir.empty()) return std::nullopt;
  o.listen = cfg.share_listen;
  o.addresses = cfg.share_addresses;
  o.upload_max = cfg.share_upload_max;
  o.disk_reserve = cfg.disk_reserve_bytes;
  o.cert = cfg.share_cert;
  o.key = cfg.share_key;
  return o;
}

void run_serve(const ServeArgs& a) {
  using namespace transfer;
  serve::ServeConfig cfg = load_config_or_exit(a.where, "serve");
  if (auto st = security::ensure_private_dir(cfg.state_dir); !st) finish(kExitFailure, st.error().message);
  // One serve per state directory: its socket, token and history are its own.
  const auto lock_path = cfg.state_dir / "serve.lock";
  security::UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock.valid() || ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0)
    finish(kExitFailure, "another braid serve runs with the state directory " + cfg.state_dir.string());
  const int ready_fd = a.foreground ? -1 : go_to_background(cfg.state_dir / "serve.log");
  ::signal(SIGPIPE, SIG_IGN);
  SignalWatch::start([](int) {
    if (auto* r = g_receiver.load()) r->interrupt("braid serve is stopping");
  });

  serve::History history(cfg.state_dir / "history", cfg.history_keep, cfg.history_max_age);
  if (auto why = history.open(std::chrono::system_clock::now()); !why.empty()) finish(kExitFailure, why);
  serve::OfferBoard board;
  EventLog log;
  const std::string dir = cfg.dir.empty() ? (cfg.state_dir / "incoming").string() : cfg.dir;

  ReceiveOptions o;
  o.dir = dir;
  o.listen = cfg.listen;
  o.max_lanes = cfg.max_lanes;
  o.max_sessions = cfg.max_sessions;
  o.links = *files::parse_link_policy(cfg.links);  // checked by the config
  o.peer_dirs = cfg.peer_dirs;
  o.decision_timeout = cfg.decision_timeout;
  auto keep = [&history](const TransferReport& r) {
    if (history.add(r, std::chrono::system_clock::now()) == 0)
      std::cerr << "braid serve: history: " << history.error() << std::endl;
  };
  o.on_report = keep;
  o.on_unfinished = [keep](const std::vector<TransferReport>& reports) {
    for (const auto& r : reports) keep(r);
  };
  o.on_code_change = [](const std::string& code) {
    std::lock_guard l(g_announce_mu);
    if (g_announcer) g_announcer->set_rendezvous(discovery::rendezvous_of(code));
  };
  o.decide_offer = [&cfg, &board, dir](const OfferQuestion& q, std::shared_ptr<PendingOffer> pending) {
    const auto own = cfg.peer_dirs.find(q.peer);
    const serve::PolicyVerdict v = serve::judge_offer(cfg, q, free_bytes(own != cfg.peer_dirs.end() ? own->second : dir));
    using K = serve::PolicyVerdict::Kind;
    if (v.kind == K::accept) {
      pending->decide({true, {}, {}});
    } else if (v.kind == K::refuse) {
      pending->decide({false, wire::RefuseReason::no_space, v.why});
    } else {
      const uint64_t id = board.add(q, pending, v.why, unix_now());
      std::cerr << "braid serve: offer " << id << " from '" << q.peer << "' (" << q.entries
                << (q.entries == 1 ? " entry, " : " entries, ") << format_size(Bytes(q.bytes))
                << ") waits for a decision: " << v.why << "; braid accept " << id << " or braid refuse " << id
                << std::endl;
    }
  };

  auto started = Receiver::start(o, log);
  if (auto* f = std::get_if<Failure>(&started)) finish(f->exit_code, f->message);
  auto receiver = std::move(std::get<0>(started));
  if (cfg.clean_after != "off") clean_target(dir, *files::parse_age(cfg.clean_after), log, "braid serve");

  serve::LiveSampler sampler;
  sampler.start([&receiver] { return receiver->live(); }, std::chrono::milliseconds(500));
  serve::ServeApi api({cfg.state_dir / "history", &board, &sampler, [&receiver] { return receiver->code(); },
                       [] { return pinned_peers(); }, edit_peer});
  serve::ControlServer control;
  if (auto why = control.start(cfg.state_dir / "control.sock", [&api](const nlohmann::json& r) { return api.handle(r); });
      !why.empty())
    finish(kExitFailure, why);
  // The dashboard's send view: sends it starts are `braid send` children, their reports in STATE_DIR/sends.
  serve::SendRoots send_roots(cfg.send_roots);
  {
    // Where the paths view looks for `braid probe --json` reports: made now, so the command the page
    // suggests works as it is.
    std::error_code ec;
    std::filesystem::create_directories(cfg.state_dir / "probes", ec);
  }
  serve::SendLauncher launcher(send_roots, cfg.state_dir / "sends");
  std::unique_ptr<serve::Dashboard> dashboard;
  std::string ready = receiver->ready_line() + "\n";
  if (cfg.dashboard) {
    const std::string token = serve::make_token();
    if (token.empty()) finish(kExitFailure, "no random bytes for the dashboard's token");
    if (auto st = security::replace_file(cfg.state_dir / "dashboard.token", token + "\n", 0600); !st)
      finish(kExitFailure, st.error().message);
    dashboard = std::make_unique<serve::Dashboard>(api, sampler, token, cfg.chart_js);
    for (const auto& why : send_roots.problems()) std::cerr << "braid serve: " << why << std::endl;
    dashboard->set_views(&send_roots, &launcher, cfg.state_dir / "probes");
    if (auto why = dashboard->start(cfg.dashboard_listen); !why.empty()) finish(kExitFailure, "dashboard: " + why);
    ready += "braid serve: dashboard " + dashboard->login_link() + "\n";
  }
  std::unique_ptr<serve::ShareServer> share;
  if (auto so = share_options(cfg, a)) {
    const std::string token = serve::make_token();
    if (token.empty()) finish(kExitFailure, "no random bytes for the share's token");
    share = std::make_unique<serve::ShareServer>(std::move(*so), token);
    if (auto why = share->start(); !why.empty()) finish(kExitFailure, "share: " + why);
    const std::string link = share->link();
    ready += serve::qr_terminal(link) + "braid serve: share " + link + "\n";
  }
  ready += "braid serve: state in " + cfg.state_dir.string() + ", files into " + dir + "\n";
  std::cout << ready << std::flush;
  if (ready_fd >= 0) {
    const std::string msg = "OK\n" + ready;
    (void)!::write(ready_fd, msg.data(), msg.size());
    ::close(ready_fd);
  }
  std::unique_ptr<discovery::Announcer> announcer;
  if (cfg.announce) announcer = start_announcer(*receiver, "braid serve");
  {
    std::lock_guard l(g_announce_mu);
    g_announcer = announcer.get();
  }
  g_receiver = receiver.get();
  if (SignalWatch::received()) receiver->interrupt("braid serve is stopping");
  (void)receiver->run();  // transfers' failures are in the history, not the exit code
  g_receiver = nullptr;
  if (dashboard) dashboard->stop();
  launcher.stop();  // finish() below exits without running destructors
  if (share) share->stop();
  control.stop();
  sampler.stop();
  {
    std::lock_guard l(g_announce_mu);
    g_announcer = nullptr;
  }
  announcer.reset();
  receiver.reset();
  const int sig = SignalWatch::received();
  std::cerr << "braid serve: stopped" << (sig ? std::string(" (") + SignalWatch::name(sig) + ")" : "") << std::endl;
  finish(0, "");
}

}  // namespace

void add_location_options(CLI::App* cmd, ServeLocation& where) {
  cmd->add_option("--config", where.config,
                  "serve's TOML config (default: " + serve::default_config_file().string() + " if it exists)");
  cmd->add_option("--state-dir", where.state_dir, "serve's state directory (default: the config's state_dir, else " +
                                                      serve::default_state_dir().string() + ")");
}

serve::ServeConfig load_config_or_exit(const ServeLocation& where, const std::string& command) {
  serve::ServeConfig cfg;
  std::filesystem::path file = where.config;
  if (file.empty()) {
    std::error_code ec;
    if (const auto d = serve::default_config_file(); !d.empty() && std::filesystem::exists(d, ec)) file = d;
  }
  if (!file.empty()) {
    auto loaded = serve::load_serve_config(file);
    if (auto* e = std::get_if<serve::ConfigError>(&loaded)) {
      std::cerr << "braid " << command << ": " << e->message << std::endl;
      std::exit(transfer::kExitUsage);
    }
    cfg = std::get<serve::ServeConfig>(loaded);
  }
  if (!where.state_dir.empty()) cfg.state_dir = where.state_dir;
  if (cfg.state_dir.empty()) cfg.state_dir = serve::default_state_dir();
  cfg.state_dir = std::filesystem::absolute(cfg.state_dir);
  return cfg;
}

void add_serve_command(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Run a receiver you leave running: config file, history, offers that wait, a web dashboard");
  add_location_options(cmd, args->where);
  cmd->add_flag("--foreground", args->foreground,
                "Stay in the foreground, logging to stderr (systemd, containers); default: go to the background "
                "once listening, logging to STATE_DIR/serve.log");
  cmd->add_option("--share", args->share,
                  "Share these files and directories with browsers: prints a link (and its QR code) that "
                  "downloads them over every address of this host at once ([share] in the config)")
      ->expected(1, -1);
  cmd->add_option("--upload", args->upload,
                  "Let the share's page upload files into DIR (same link; [share] upload_dir)");
  cmd->callback([args] { run_serve(*args); });
}

}  // namespace braid::cli
