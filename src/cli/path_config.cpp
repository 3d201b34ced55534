#include "cli/path_config.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "core/units_parse.hpp"

namespace braid::cli {

namespace {

struct Bad {
  std::string message;
};

void erase(std::vector<std::string>& v, const std::string& x) { v.erase(std::remove(v.begin(), v.end(), x), v.end()); }

}  // namespace

std::variant<PathConfig, PathConfigError> parse_path_config(std::string_view text, const std::string& source) {
  PathConfig c;
  auto fail = [&](const toml::node& at, const std::string& key, const std::string& why) {
    throw Bad{source + ":" + std::to_string(at.source().begin.line) + ": key '" + key + "': " + why};
  };
  try {
    const toml::table doc = toml::parse(text, source);
    for (const auto& [top, node] : doc) {
      const std::string k(top.str());
      if (k != "interface") fail(node, k, "unknown (the file has [interface.NAME] tables only)");
      const toml::table* ifaces = node.as_table();
      if (!ifaces) fail(node, k, "must be a table of interfaces ([interface.NAME])");
      for (const auto& [name_key, inode] : *ifaces) {
        const std::string name(name_key.str());
        const std::string at = "interface." + name;
        const toml::table* t = inode.as_table();
        if (!t) fail(inode, at, "must be a table (use, metered)");
        for (const auto& [field_key, v] : *t) {
          const std::string field(field_key.str());
          if (field == "use") {
            const auto use = v.value<std::string>();
            if (!use || (*use != "normal" && *use != "backup" && *use != "avoid"))
              fail(v, at + ".use", "must be \"normal\", \"backup\" or \"avoid\"");
            if (*use == "backup") c.backup.push_back(name);
            if (*use == "avoid") c.avoid.push_back(name);
          } else if (field == "metered") {
            const auto text_rate = v.value<std::string>();
            const auto r = text_rate ? parse_rate(*text_rate) : std::nullopt;
            if (!r || r->bytes_per_second() <= 0) fail(v, at + ".metered", "must be a rate such as \"5Mbit/s\"");
            c.metered[name] = *r;
          } else {
            fail(v, at + "." + field, "unknown (use, metered)");
          }
        }
      }
    }
  } catch (const toml::parse_error& e) {
    return PathConfigError{source + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description())};
  } catch (const Bad& b) {
    return PathConfigError{b.message};
  }
  return c;
}

std::variant<PathConfig, PathConfigError> load_path_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return PathConfig{};
    return PathConfigError{file.string() + ": cannot be read"};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_path_config(ss.str(), file.string());
}

std::filesystem::path default_path_config_file() {
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::filesystem::path(x) / "braid" / "paths.toml";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : "/") / ".config" / "braid" / "paths.toml";
}

void apply_flags(PathConfig& c, const std::vector<std::string>& backup, const std::vector<std::string>& avoid,
                 const std::map<std::string, Rate>& metered) {
  for (const auto& b : backup) {
    erase(c.avoid, b);
    if (std::find(c.backup.begin(), c.backup.end(), b) == c.backup.end()) c.backup.push_back(b);
  }
  for (const auto& a : avoid) {
    erase(c.backup, a);
    if (std::find(c.avoid.begin(), c.avoid.end(), a) == c.avoid.end()) c.avoid.push_back(a);
  }
  for (const auto& [i, r] : metered) c.metered[i] = r;
}

}  // namespace braid::cli
