// What the dashboard's send view and paths view stand on.
//
// SendRoots: the directories the dashboard may show and send from (`[send]
// roots` in serve.toml). A browser names a file as (root index, relative
// path); the path is resolved with its symlinks and must still lie inside
// the root, so neither "..", an absolute path nor a symlink leads out. With
// no roots configured the send view shows nothing and sends nothing.
//
// SendLauncher: a send started from the dashboard is a real `braid send`
// child process (this binary, /proc/self/exe) with the same identity and
// known peers as serve, its report (--json) and activity log (--log) in
// STATE_DIR/sends/N.*. A child of its own keeps a failing or slow transfer
// out of serve's receiver and its threads; serve ends the children it
// started when it stops.
//
// paths_view: the host's interfaces and addresses (getifaddrs) beside the
// newest `braid probe --json` report found in STATE_DIR/probes/ — each
// measured path's capacity (alone) and delay (idle RTT, added delay under
// load). serve does not probe by itself: a probe loads the paths it
// measures, which is the user's call.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace braid::serve {

class SendRoots {
 public:
  /// Roots that do not exist or are not directories are dropped (and said in `problems`).
  explicit SendRoots(const std::vector<std::string>& roots);
  const std::vector<std::filesystem::path>& roots() const { return roots_; }
  const std::vector<std::string>& problems() const { return problems_; }

  /// The absolute, symlink-free path of `rel` under root `root`, or "" and `why`.
  std::filesystem::path resolve(size_t root, const std::string& rel, std::string& why) const;
  /// {root, path, entries: [{name, dir, size}]} (directories first, then by name), or {error}.
  nlohmann::json list(size_t root, const std::string& rel) const;

 private:
  std::vector<std::filesystem::path> roots_;  // canonical
  std::vector<std::string> problems_;
};

class SendLauncher {
 public:
  SendLauncher(const SendRoots& roots, std::filesystem::path dir) : roots_(roots), dir_(std::move(dir)) {}
  ~SendLauncher() { stop(); }
  /// SIGTERM to every child still running, then waits for them.
  void stop();

  /// {root, paths: [rel…], to: LABEL|HOST[:PORT], code?} → {id} or {error}.
  nlohmann::json start(const nlohmann::json& request);
  /// Every send started: {id, to, paths, state: running|done|failed, exit_code, report?, output?}.
  nlohmann::json list();

 private:
  struct Child {
    uint64_t id = 0;
    pid_t pid = -1;
    std::string to;
    std::vector<std::string> paths;
    bool running = true;
    int exit_code = -1;
  };
  void reap_locked();

  const SendRoots& roots_;
  std::filesystem::path dir_;
  std::mutex mu_;
  uint64_t next_id_ = 1;
  std::vector<Child> children_;
};

/// {interfaces: [{name, up, loopback, addresses: […]}], probe: null | {file, time, peer,
/// paths: [{name, interface, remote, capacity_mbit, idle_rtt_ms, added_delay_p50_ms, loaded_rtt_p50_ms}]}}.
nlohmann::json paths_view(const std::filesystem::path& probe_dir);

}  // namespace braid::serve
