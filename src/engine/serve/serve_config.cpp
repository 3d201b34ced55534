#include "engine/serve/serve_config.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "core/units_parse.hpp"
#include "engine/files/debris.hpp"
#include "engine/files/link_policy.hpp"
#include "engine/lanes/endpoint.hpp"
#include "engine/lanes/unix_socket.hpp"

namespace braid::serve {
namespace {

// Thrown inside the parser only, turned into a ConfigError at its edge.
struct Bad {
  std::string message;
};

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const toml::node& at, const std::string& key, const std::string& why) const {
    throw Bad{source_ + ":" + std::to_string(at.source().begin.line) + ": key '" + key + "': " + why};
  }

  std::string string(const toml::node& n, const std::string& key) const {
    if (!n.is_string()) fail(n, key, "must be a string");
    return *n.value<std::string>();
  }
  bool boolean(const toml::node& n, const std::string& key) const {
    if (!n.is_boolean()) fail(n, key, "must be true or false");
    return *n.value<bool>();
  }
  size_t count(const toml::node& n, const std::string& key, int64_t lo, int64_t hi) const {
    if (!n.is_integer()) fail(n, key, "must be a whole number");
    const int64_t v = *n.value<int64_t>();
    if (v < lo || v > hi) fail(n, key, "must be " + std::to_string(lo) + ".." + std::to_string(hi));
    return static_cast<size_t>(v);
  }
  uint64_t size(const toml::node& n, const std::string& key) const {
    if (n.is_integer() && *n.value<int64_t>() >= 0) return static_cast<uint64_t>(*n.value<int64_t>());
    const auto b = n.is_string() ? parse_size(*n.value<std::string>()) : std::nullopt;
    if (!b) fail(n, key, "must be a size such as \"2GiB\" or \"500MB\"");
    return b->count();
  }
  std::chrono::seconds age(const toml::node& n, const std::string& key) const {
    const auto a = n.is_string() ? files::parse_age(*n.value<std::string>()) : std::nullopt;
    if (!a) fail(n, key, "must be a time such as \"90s\", \"30m\", \"12h\" or \"90d\"");
    return *a;
  }
  std::vector<std::string> strings(const toml::node& n, const std::string& key) const {
    std::vector<std::string> out;
    if (n.is_string()) return {*n.value<std::string>()};
    const auto* arr = n.as_array();
    if (!arr) fail(n, key, "must be a string or a list of strings");
    for (const auto& e : *arr) out.push_back(string(e, key));
    return out;
  }
  const toml::table& table(const toml::node& n, const std::string& key) const {
    const auto* t = n.as_table();
    if (!t) fail(n, key, "must be a table ([" + key + "])");
    return *t;
  }

 private:
  std::string source_;
};

void read_receive(const Reader& r, const toml::table& t, ServeConfig& c) {
  for (const auto& [k, v] : t) {
    const std::string key = "receive." + std::string(k.str());
    if (k == "listen") {
      c.listen = r.strings(v, key);
      for (const auto& l : c.listen)
        if (lanes::unix_path_of(l).empty() && !lanes::parse_numeric_endpoint(l, 7878))
          r.fail(v, key, "'" + l + "' is not ADDR:PORT (e.g. \"[::]:7878\", \"192.168.1.5:7878\") or unix:PATH");
    } else if (k == "dir") {
      c.dir = r.string(v, key);
      if (c.dir.empty()) r.fail(v, key, "must not be empty");
    } else if (k == "links") {
      c.links = r.string(v, key);
      if (!files::parse_link_policy(c.links)) r.fail(v, key, "must be \"keep\", \"safe\" or \"skip\"");
    } else if (k == "clean_after") {
      c.clean_after = r.string(v, key);
      if (c.clean_after != "off") (void)r.age(v, key);
    } else if (k == "announce") {
      c.announce = r.boolean(v, key);
    } else {
      r.fail(v, key, "unknown key (receive has listen, dir, links, clean_after, announce)");
    }
  }
}

void read_limits(const Reader& r, const toml::table& t, ServeConfig& c) {
  for (const auto& [k, v] : t) {
    const std::string key = "limits." + std::string(k.str());
    if (k == "max_sessions") c.max_sessions = r.count(v, key, 1, 4096);
    else if (k == "max_lanes") c.max_lanes = r.count(v, key, 1, 1024);
    else if (k == "disk_reserve") c.disk_reserve_bytes = r.size(v, key);
    else r.fail(v, key, "unknown key (limits has max_sessions, max_lanes, disk_reserve)");
  }
}

void read_accept(const Reader& r, const toml::table& t, ServeConfig& c) {
  for (const auto& [k, v] : t) {
    const std::string key = "accept." + std::string(k.str());
    if (k == "from") {
      if (v.is_string()) {
        const std::string s = *v.value<std::string>();
        if (s == "pinned") c.accept_from = AcceptFrom::pinned;
        else if (s == "none") c.accept_from = AcceptFrom::none;
        else r.fail(v, key, "must be \"pinned\", \"none\" or a list of peer labels");
      } else {
        c.accept_from = AcceptFrom::listed;
        c.accept_labels = r.strings(v, key);
      }
    } else if (k == "ask_above") {
      c.ask_above_bytes = r.size(v, key);
    } else if (k == "timeout") {
      c.decision_timeout = r.age(v, key);
      if (c.decision_timeout.count() < 1) r.fail(v, key, "must be at least 1s");
    } else {
      r.fail(v, key, "unknown key (accept has from, ask_above, timeout)");
    }
  }
}

void read_history(const Reader& r, const toml::table& t, ServeConfig& c) {
  for (const auto& [k, v] : t) {
    const std::string key = "history." + std::string(k.str());
    if (k == "keep") c.history_keep = r.count(v, key, 1, 10'000'000);
    else if (k == "max_age") c.history_max_age = r.age(v, key);
    else r.fail(v, key, "unknown key (history has keep, max_age)");
  }
}

void read_dashboard(const Reader& r, const toml::table& t, ServeConfig& c) {
  for (const auto& [k, v] : t) {
    const std::string key = "dashboard." + std::string(k.str());
    if (k == "enabled") {
      c.dashboard = r.boolean(v, key);
    } else if (k == "listen") {
      c.dashboard_listen = r.string(v, key);
      if (!lanes::parse_numeric_endpoint(c.dashboard_listen, 7879))
        r.fail(v, key, "'" + c.dashboard_listen + "' is not ADDR:PORT (e.g. \"127.0.0.1:7879\")");
    } else if (k == "chart_js") {
      c.chart_js = r.string(v, key);
    } else {
      r.fail(v, key, "unknown key (dashboard has enabled, listen, chart_js)");
    }
  }
}

void read_share(const Reader& r, const toml::table& t, ServeConfig& c) {
  for (const auto& [k, v] : t) {
    const std::string key = "share." + std::string(k.str());
    if (k == "paths") {
      c.share_paths = r.strings(v, key);
    } else if (k == "listen") {
      c.share_listen = r.string(v, key);
      if (!lanes::parse_numeric_endpoint(c.share_listen, 7880))
        r.fail(v, key, "'" + c.share_listen + "' is not ADDR:PORT (e.g. \"0.0.0.0:7880\")");
    } else if (k == "addresses") {
      c.share_addresses = r.strings(v, key);
    } else if (k == "upload_dir") {
      c.share_upload_dir = r.string(v, key);
      if (c.share_upload_dir.empty()) r.fail(v, key, "must not be empty");
    } else if (k == "upload_max") {
      c.share_upload_max = r.size(v, key);
    } else if (k == "cert") {
      c.share_cert = r.string(v, key);
    } else if (k == "key") {
      c.share_key = r.string(v, key);
    } else {
      r.fail(v, key, "unknown key (share has paths, listen, addresses, upload_dir, upload_max, cert, key)");
    }
  }
  if (c.share_cert.empty() != c.share_key.empty())
    r.fail(t, "share.cert", "HTTPS needs both cert and key (PEM files)");
}

void read_send(const Reader& r, const toml::table& t, ServeConfig& c) {
  for (const auto& [k, v] : t) {
    const std::string key = "send." + std::string(k.str());
    if (k == "roots") {
      c.send_roots = r.strings(v, key);
      for (const auto& root : c.send_roots)
        if (root.empty() || root.front() != '/') r.fail(v, key, "'" + root + "' is not an absolute directory");
    } else {
      r.fail(v, key, "unknown key (send has roots)");
    }
  }
}

void read_peers(const Reader& r, const toml::table& t, ServeConfig& c) {
  for (const auto& [label, v] : t) {
    const std::string base = "peers." + std::string(label.str());
    for (const auto& [k, pv] : r.table(v, base)) {
      const std::string key = base + "." + std::string(k.str());
      if (k == "dir") c.peer_dirs[std::string(label.str())] = r.string(pv, key);
      else r.fail(pv, key, "unknown key (a peer has dir)");
    }
  }
}

ServeConfig parse(const Reader& r, const toml::table& root) {
  ServeConfig c;
  for (const auto& [k, v] : root) {
    const std::string key(k.str());
    if (key == "state_dir") c.state_dir = r.string(v, key);
    else if (key == "receive") read_receive(r, r.table(v, key), c);
    else if (key == "limits") read_limits(r, r.table(v, key), c);
    else if (key == "accept") read_accept(r, r.table(v, key), c);
    else if (key == "history") read_history(r, r.table(v, key), c);
    else if (key == "dashboard") read_dashboard(r, r.table(v, key), c);
    else if (key == "share") read_share(r, r.table(v, key), c);
    else if (key == "send") read_send(r, r.table(v, key), c);
    else if (key == "peers") read_peers(r, r.table(v, key), c);
    else r.fail(v, key, "unknown key (the file has state_dir and [receive], [limits], [accept], [history], [dashboard], [share], [send], [peers.LABEL])");
  }
  return c;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v == '/' ? std::string(v) : std::string();
}

}  // namespace

std::variant<ServeConfig, ConfigError> parse_serve_config(std::string_view text, const std::string& source) {
  try {
    const toml::table root = toml::parse(text, source);
    return parse(Reader(source), root);
  } catch (const toml::parse_error& e) {
    return ConfigError{source + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description())};
  } catch (const Bad& b) {
    return ConfigError{b.message};
  }
}

std::variant<ServeConfig, ConfigError> load_serve_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return ConfigError{file.string() + ": cannot read it"};
  std::ostringstream text;
  text << in.rdbuf();
  return parse_serve_config(text.str(), file.string());
}

std::filesystem::path default_state_dir() {
  if (auto d = env("STATE_DIRECTORY"); !d.empty()) return d.substr(0, d.find(':'));  // systemd may list several
  if (::geteuid() == 0) return "/var/lib/braid";
  if (auto d = env("XDG_STATE_HOME"); !d.empty()) return std::filesystem::path(d) / "braid";
  if (auto h = env("HOME"); !h.empty()) return std::filesystem::path(h) / ".local/state/braid";
  return "/tmp/braid-state-" + std::to_string(::geteuid());
}

std::filesystem::path default_config_file() {
  if (auto d = env("XDG_CONFIG_HOME"); !d.empty()) return std::filesystem::path(d) / "braid/serve.toml";
  if (::geteuid() == 0) return "/etc/braid/serve.toml";
  if (auto h = env("HOME"); !h.empty()) return std::filesystem::path(h) / ".config/braid/serve.toml";
  return {};
}

}  // namespace braid::serve
