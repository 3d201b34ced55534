#include "engine/serve/send_view.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/close_range.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

namespace braid::serve {
namespace fs = std::filesystem;

namespace {

// True if `p` is `root` or lies below it (both canonical).
bool inside(const fs::path& p, const fs::path& root) {
  auto r = root.begin(), q = p.begin();
  for (; r != root.end(); ++r, ++q)
    if (q == p.end() || *q != *r) return false;
  return true;
}

std::string read_text(const fs::path& p, size_t max) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  std::string t = s.str();
  return t.size() > max ? t.substr(t.size() - max) : t;
}

}  // namespace

SendRoots::SendRoots(const std::vector<std::string>& roots) {
  for (const auto& r : roots) {
    std::error_code ec;
    const fs::path c = fs::canonical(r, ec);
    if (ec || !fs::is_directory(c, ec)) {
      problems_.push_back("send root " + r + " is not a directory");
      continue;
    }
    roots_.push_back(c);
  }
}

fs::path SendRoots::resolve(size_t root, const std::string& rel, std::string& why) const {
  if (root >= roots_.size()) {
    why = "no such root";
    return {};
  }
  const fs::path r(rel);
  if (r.is_absolute() || rel.find('\0') != std::string::npos) {
    why = "a path relative to its root is expected";
    return {};
  }
  for (const auto& part : r)
    if (part == "..") {
      why = "'..' is not allowed";
      return {};
    }
  std::error_code ec;
  const fs::path c = fs::canonical(roots_[root] / r, ec);
  if (ec) {
    why = "no such file or directory";
    return {};
  }
  if (!inside(c, roots_[root])) {  // a symlink out of the root
    why = "outside the root";
    return {};
  }
  return c;
}

nlohmann::json SendRoots::list(size_t root, const std::string& rel) const {
  std::string why;
  const fs::path dir = resolve(root, rel, why);
  if (dir.empty()) return {{"error", why}};
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {{"error", "not a directory"}};
  std::vector<nlohmann::json> entries;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code e2;
    const bool is_dir = it->is_directory(e2);
    if (!is_dir && !it->is_regular_file(e2)) continue;  // devices, sockets, dangling links: nothing to send
    entries.push_back({{"name", it->path().filename().string()},
                       {"dir", is_dir},
                       {"size", is_dir ? 0 : static_cast<uint64_t>(it->file_size(e2))}});
  }
  std::sort(entries.begin(), entries.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    if (a["dir"] != b["dir"]) return a["dir"].get<bool>();
    return a["name"].get<std::string>() < b["name"].get<std::string>();
  });
  return {{"root", root}, {"root_path", roots_[root].string()}, {"path", rel}, {"entries", entries}};
}

void SendLauncher::stop() {
  std::lock_guard l(mu_);
  for (auto& c : children_)
    if (c.running) ::kill(c.pid, SIGTERM);
  for (auto& c : children_)
    if (c.running) {
      ::waitpid(c.pid, nullptr, 0);
      c.running = false;
      c.exit_code = 128 + SIGTERM;
    }
}

nlohmann::json SendLauncher::start(const nlohmann::json& req) {
  if (roots_.roots().empty()) return {{"error", "no send roots are configured ([send] roots in serve.toml)"}};
  if (!req.is_object() || !req.contains("root") || !req["root"].is_number_unsigned() || !req.contains("paths") ||
      !req["paths"].is_array() || req["paths"].empty() || !req.contains("to") || !req["to"].is_string())
    return {{"error", "expected {root, paths: [...], to}"}};
  const std::string to = req["to"];
  // The target is an operand of braid send: it must not read as a flag.
  if (to.empty() || to.front() == '-' || to.size() > 255 ||
      std::any_of(to.begin(), to.end(), [](char c) { return c < 0x21 || c > 0x7e; }))
    return {{"error", "the peer must be a pinned peer's label or HOST[:PORT]"}};
  std::string code;
  if (req.contains("code") && req["code"].is_string()) code = req["code"];
  std::vector<std::string> files, rels;
  for (const auto& p : req["paths"]) {
    if (!p.is_string()) return {{"error", "a path must be a string"}};
    std::string why;
    const fs::path f = roots_.resolve(req["root"], p.get<std::string>(), why);
    if (f.empty()) return {{"error", p.get<std::string>() + ": " + why}};
    files.push_back(f.string());  // absolute: never a flag
    rels.push_back(p);
  }
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return {{"error", "cannot create " + dir_.string() + ": " + ec.message()}};

  std::lock_guard l(mu_);
  const uint64_t id = next_id_++;
  const std::string base = (dir_ / std::to_string(id)).string();
  std::vector<std::string> args = {"braid", "send", "-q", "--json", base + ".json", "--log", base + ".log"};
  args.insert(args.end(), files.begin(), files.end());
  args.push_back(to);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The environment is built before fork: a child of a threaded process may only make async-signal-safe calls.
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::string_view(*e).rfind("BRAID_CODE=", 0) != 0) env.emplace_back(*e);
  if (!code.empty()) env.push_back("BRAID_CODE=" + code);  // in the environment, not in ps's view of argv
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int out = ::open((base + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) return {{"error", "cannot create " + base + ".out"}};
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out);
    return {{"error", "fork failed"}};
  }
  if (pid == 0) {
    // Only stdin (null), stdout and stderr (the .out file): none of serve's listeners or sessions.
    const int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::close_range(3, ~0U, 0);
    // serve blocks its stop signals in every thread (a watcher sigwaits) and ignores SIGPIPE; both would pass through exec.
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::execve("/proc/self/exe", argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out);
  children_.push_back({id, pid, to, rels, true, -1});
  return {{"id", id}};
}

void SendLauncher::reap_locked() {
  for (auto& c : children_) {
    if (!c.running) continue;
    int status = 0;
    if (::waitpid(c.pid, &status, WNOHANG) == c.pid) {
      c.running = false;
      c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  }
}

nlohmann::json SendLauncher::list() {
  std::lock_guard l(mu_);
  reap_locked();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : children_) {
    const std::string base = (dir_ / std::to_string(c.id)).string();
    nlohmann::json j = {{"id", c.id},
                        {"to", c.to},
                        {"paths", c.paths},
                        {"state", c.running ? "running" : c.exit_code == 0 ? "done" : "failed"},
                        {"exit_code", c.running ? nlohmann::json(nullptr) : nlohmann::json(c.exit_code)}};
    if (!c.running) {
      const auto report = nlohmann::json::parse(read_text(base + ".json", 1 << 20), nullptr, false);
      if (report.is_object()) j["report"] = report;
      j["output"] = read_text(base + ".out", 2000);
    }
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json paths_view(const fs::path& probe_dir) {
  std::map<std::string, nlohmann::json> ifaces;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_name) continue;
      nlohmann::json& f = ifaces[i->ifa_name];
      if (f.is_null())
        f = {{"name", i->ifa_name},
             {"up", (i->ifa_flags & IFF_UP) != 0},
             {"loopback", (i->ifa_flags & IFF_LOOPBACK) != 0},
             {"addresses", nlohmann::json::array()}};
      if (!i->ifa_addr) continue;
      char text[INET6_ADDRSTRLEN] = {};
      if (i->ifa_addr->sa_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
      else if (i->ifa_addr->sa_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr, text, sizeof text);
      if (*text) f["addresses"].push_back(text);
    }
    ::freeifaddrs(list);
  }
  nlohmann::json out = {{"interfaces", nlohmann::json::array()}, {"probe", nullptr}};
  for (auto& [name, f] : ifaces) out["interfaces"].push_back(f);

  // The newest probe report: a file written by `braid probe --json` into the probe directory.
  std::error_code ec;
  fs::path newest;
  fs::file_time_type newest_time{};
  for (fs::directory_iterator it(probe_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (it->path().extension() != ".json" || !it->is_regular_file(e2)) continue;
    const auto t = it->last_write_time(e2);
    if (!e2 && (newest.empty() || t > newest_time)) {
      newest = it->path();
      newest_time = t;
    }
  }
  if (newest.empty()) return out;
  const auto doc = nlohmann::json::parse(read_text(newest, 64 << 20), nullptr, false);
  if (!doc.is_object() || doc.value("role", "") != "probe" || !doc.contains("paths") || !doc["paths"].is_array())
    return out;
  const auto age = std::chrono::duration_cast<std::chrono::seconds>(fs::file_time_type::clock::now() - newest_time);
  nlohmann::json paths = nlohmann::json::array();
  for (const auto& p : doc["paths"]) {
    if (!p.is_object()) continue;
    const nlohmann::json alone = p.value("alone", nlohmann::json::object());
    paths.push_back({{"name", p.value("name", "")},
                     {"interface", p.value("interface", "")},
                     {"remote", p.value("remote", "")},
                     {"capacity_mbit", alone.value("mbit_per_second", 0.0)},
                     {"idle_rtt_ms", p.value("idle_rtt_ms", nlohmann::json(nullptr))},
                     {"added_delay_p50_ms", p.value("added_delay_p50_ms", nlohmann::json(nullptr))},
                     {"loaded_rtt_p50_ms", alone.value("rtt_loaded_p50_ms", nlohmann::json(nullptr))}});
  }
  out["probe"] = {{"file", newest.filename().string()},
                  {"age_seconds", age.count()},
                  {"peer", doc.value("peer", "")},
                  {"paths", paths}};
  return out;
}

}  // namespace braid::serve
