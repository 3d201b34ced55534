// `braid serve`'s configuration: a TOML file (docs/serve.md has every key),
// defaults that work with no file at all. Parsing is strict — an unknown
// key or a value of the wrong kind is an error naming the key and its line,
// since a typo silently ignored would turn, say, a per-peer directory or an
// accept policy into the default.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace braid::serve {

/// Who may send without anyone deciding (`[accept] from`).
enum class AcceptFrom {
  pinned,  // every peer pinned in known_peers before its session (default)
  listed,  // only the labels in `labels`
  none,    // every offer waits for a decision
};

struct ServeConfig {
  std::filesystem::path state_dir;  // empty: default_state_dir()
  // [receive]
  std::vector<std::string> listen;  // empty: [::]:7878 (as recv)
  std::string dir;                  // empty: STATE_DIR/incoming
  std::string links = "safe";
  std::string clean_after = "7d";   // or "off"
  bool announce = true;
  // [limits]
  size_t max_sessions = 16;
  size_t max_lanes = 64;
  uint64_t disk_reserve_bytes = 0;  // an offer that would leave less free than this in its target is refused
  // [accept]
  AcceptFrom accept_from = AcceptFrom::pinned;
  std::vector<std::string> accept_labels;  // with AcceptFrom::listed
  uint64_t ask_above_bytes = 0;            // larger offers wait even from those peers; 0: no bound
  std::chrono::seconds decision_timeout{120};
  // [history]
  size_t history_keep = 1000;
  std::chrono::seconds history_max_age{std::chrono::hours(24 * 90)};
  // [dashboard]
  bool dashboard = true;
  std::string dashboard_listen = "127.0.0.1:7879";
  std::string chart_js = "/usr/share/javascript/chart.js/chart.min.js";
  // [share] (braid serve --share, --upload)
  std::vector<std::string> share_paths;      // shared even without --share
  std::string share_listen = "0.0.0.0:7880";
  std::vector<std::string> share_addresses;  // advertised to the page; empty: the host's IPv4 addresses
  std::string share_upload_dir;              // uploads allowed into it; empty: none (unless --upload)
  uint64_t share_upload_max = 4ull << 30;    // largest upload; 0: no bound
  std::string share_cert, share_key;         // PEM files: HTTPS
  // [send]: what the dashboard's send view may show and send (nothing when empty)
  std::vector<std::string> send_roots;
  // [peers.LABEL]
  std::map<std::string, std::string> peer_dirs;
};

struct ConfigError {
  std::string message;  // "FILE:LINE: key 'a.b': why"
};

/// Parses TOML text; `source` names it in errors.
std::variant<ServeConfig, ConfigError> parse_serve_config(std::string_view text, const std::string& source);
/// Reads and parses a file.
std::variant<ServeConfig, ConfigError> load_serve_config(const std::filesystem::path& file);

/// Where `braid serve` keeps its state when the config does not say:
/// $STATE_DIRECTORY (systemd's StateDirectory=), else /var/lib/braid for
/// root, else $XDG_STATE_HOME/braid, else ~/.local/state/braid.
std::filesystem::path default_state_dir();
/// The config file read when --config is not given (it need not exist):
/// $XDG_CONFIG_HOME/braid/serve.toml (beside the identity; the system unit
/// sets XDG_CONFIG_HOME=/etc), else /etc/braid/serve.toml for root, else
/// ~/.config/braid/serve.toml.
std::filesystem::path default_config_file();

}  // namespace braid::serve
