// How `braid send` and `braid probe` use this host's interfaces, kept in a
// file instead of repeated on every command line: $XDG_CONFIG_HOME/braid/
// paths.toml (~/.config/braid/paths.toml). The command line adds to it
// (--backup, --avoid, --metered; a flag wins for its interface).
//
//   [interface.wwan0]
//   use = "backup"        # normal (default), backup or avoid
//   metered = "5Mbit/s"   # its lanes share at most this
//
// Strict like serve.toml: an unknown key or a bad value is one line naming
// the file, the line and the key (exit 2), never silently the default.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/units.hpp"

namespace braid::cli {

struct PathConfig {
  std::vector<std::string> backup, avoid;
  std::map<std::string, Rate> metered;
};

struct PathConfigError {
  std::string message;  // "FILE:LINE: key 'interface.X.use': why"
};

std::variant<PathConfig, PathConfigError> parse_path_config(std::string_view text, const std::string& source);
/// `file` need not exist (then: nothing configured).
std::variant<PathConfig, PathConfigError> load_path_config(const std::filesystem::path& file);
/// $XDG_CONFIG_HOME/braid/paths.toml, else ~/.config/braid/paths.toml.
std::filesystem::path default_path_config_file();

/// The command line over the file: an interface named by a flag takes the
/// flag's word for it (--backup X moves X out of the file's avoid list).
void apply_flags(PathConfig& c, const std::vector<std::string>& backup, const std::vector<std::string>& avoid,
                 const std::map<std::string, Rate>& metered);

}  // namespace braid::cli
