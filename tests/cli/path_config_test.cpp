// paths.toml: how send and probe use this host's interfaces (cli/path_config.hpp).
#include "cli/path_config.hpp"

#include <gtest/gtest.h>

namespace braid::cli {
namespace {

PathConfig ok(const char* text) {
  auto r = parse_path_config(text, "paths.toml");
  if (auto* e = std::get_if<PathConfigError>(&r)) ADD_FAILURE() << e->message;
  return std::get_if<PathConfig>(&r) ? std::get<PathConfig>(r) : PathConfig{};
}

std::string bad(const char* text) {
  auto r = parse_path_config(text, "paths.toml");
  return std::holds_alternative<PathConfigError>(r) ? std::get<PathConfigError>(r).message : "(accepted)";
}

TEST(PathConfig, InterfacesAreBackupAvoidOrMetered) {
  const PathConfig c = ok(R"(
[interface.wwan0]
use = "backup"
metered = "5Mbit/s"

[interface.docker0]
use = "avoid"

[interface.eth0]
use = "normal"
)");
  EXPECT_EQ(c.backup, std::vector<std::string>{"wwan0"});
  EXPECT_EQ(c.avoid, std::vector<std::string>{"docker0"});
  ASSERT_EQ(c.metered.count("wwan0"), 1u);
  EXPECT_DOUBLE_EQ(c.metered.at("wwan0").bits_per_second(), 5e6);
  EXPECT_TRUE(ok("").backup.empty());
}

TEST(PathConfig, AMistakeNamesTheFileTheLineAndTheKey) {
  EXPECT_EQ(bad("[interface.wwan0]\nuse = \"spare\"\n"),
            "paths.toml:2: key 'interface.wwan0.use': must be \"normal\", \"backup\" or \"avoid\"");
  EXPECT_EQ(bad("[interface.wwan0]\nmetered = \"fast\"\n"),
            "paths.toml:2: key 'interface.wwan0.metered': must be a rate such as \"5Mbit/s\"");
  EXPECT_EQ(bad("[interface.wwan0]\nspeed = 1\n"), "paths.toml:2: key 'interface.wwan0.speed': unknown (use, metered)");
  EXPECT_NE(bad("[paths]\nx = 1\n").find("paths.toml:1: key 'paths': unknown"), std::string::npos);
  EXPECT_NE(bad("[interface.wwan0\n").find("paths.toml:1:"), std::string::npos);  // TOML syntax
}

TEST(PathConfig, TheCommandLineWinsForTheInterfacesItNames) {
  PathConfig c = ok("[interface.wwan0]\nuse = \"avoid\"\n[interface.usb0]\nmetered = \"1Mbit/s\"\n");
  apply_flags(c, {"wwan0"}, {}, {{"usb0", Rate::mbit(3)}});
  EXPECT_EQ(c.backup, std::vector<std::string>{"wwan0"});
  EXPECT_TRUE(c.avoid.empty());
  EXPECT_DOUBLE_EQ(c.metered.at("usb0").bits_per_second(), 3e6);
}

TEST(PathConfig, AMissingFileIsNothingConfigured) {
  auto r = load_path_config("/nonexistent/braid/paths.toml");
  ASSERT_TRUE(std::holds_alternative<PathConfig>(r));
  EXPECT_TRUE(std::get<PathConfig>(r).metered.empty());
}

}  // namespace
}  // namespace braid::cli
