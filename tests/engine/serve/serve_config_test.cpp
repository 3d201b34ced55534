// braid serve's config: defaults with no file, every key read, and each
// mistake one line naming the key and its line.
#include "engine/serve/serve_config.hpp"

#include <gtest/gtest.h>

namespace braid::serve {
namespace {

ServeConfig parsed(const std::string& text) {
  auto r = parse_serve_config(text, "serve.toml");
  if (auto* e = std::get_if<ConfigError>(&r)) ADD_FAILURE() << e->message;
  return std::get_if<ServeConfig>(&r) ? std::get<ServeConfig>(r) : ServeConfig{};
}

std::string error_of(const std::string& text) {
  auto r = parse_serve_config(text, "serve.toml");
  if (auto* e = std::get_if<ConfigError>(&r)) return e->message;
  ADD_FAILURE() << "accepted: " << text;
  return {};
}

TEST(ServeConfig, EmptyFileGivesTheDefaults) {
  const ServeConfig c = parsed("");
  EXPECT_TRUE(c.state_dir.empty());
  EXPECT_TRUE(c.listen.empty());
  EXPECT_TRUE(c.dir.empty());
  EXPECT_EQ(c.max_sessions, 16u);
  EXPECT_EQ(c.max_lanes, 64u);
  EXPECT_EQ(c.accept_from, AcceptFrom::pinned);
  EXPECT_EQ(c.decision_timeout, std::chrono::seconds(120));
  EXPECT_EQ(c.history_keep, 1000u);
  EXPECT_EQ(c.history_max_age, std::chrono::hours(24 * 90));
  EXPECT_TRUE(c.dashboard);
  EXPECT_EQ(c.dashboard_listen, "127.0.0.1:7879");  // localhost only unless told
  EXPECT_TRUE(c.peer_dirs.empty());
}

TEST(ServeConfig, ReadsEveryKey) {
  const ServeConfig c = parsed(R"(
state_dir = "/var/lib/b"
[receive]
listen = ["[::]:7000", "unix:/run/b.sock"]
dir = "/srv/in"
links = "skip"
clean_after = "off"
announce = false
[limits]
max_sessions = 3
max_lanes = 8
disk_reserve = "2GiB"
[accept]
from = ["vm", "laptop"]
ask_above = "10GB"
timeout = "5m"
[history]
keep = 50
max_age = "7d"
[dashboard]
enabled = false
listen = "[::1]:9000"
chart_js = "/opt/chart.min.js"
[peers.vm]
dir = "/srv/vm"
[peers.laptop]
dir = "/srv/laptop"
)");
  EXPECT_EQ(c.state_dir, "/var/lib/b");
  EXPECT_EQ(c.listen, (std::vector<std::string>{"[::]:7000", "unix:/run/b.sock"}));
  EXPECT_EQ(c.dir, "/srv/in");
  EXPECT_EQ(c.links, "skip");
  EXPECT_EQ(c.clean_after, "off");
  EXPECT_FALSE(c.announce);
  EXPECT_EQ(c.max_sessions, 3u);
  EXPECT_EQ(c.max_lanes, 8u);
  EXPECT_EQ(c.disk_reserve_bytes, 2ull << 30);
  EXPECT_EQ(c.accept_from, AcceptFrom::listed);
  EXPECT_EQ(c.accept_labels, (std::vector<std::string>{"vm", "laptop"}));
  EXPECT_EQ(c.ask_above_bytes, 10'000'000'000ull);
  EXPECT_EQ(c.decision_timeout, std::chrono::minutes(5));
  EXPECT_EQ(c.history_keep, 50u);
  EXPECT_EQ(c.history_max_age, std::chrono::hours(24 * 7));
  EXPECT_FALSE(c.dashboard);
  EXPECT_EQ(c.dashboard_listen, "[::1]:9000");
  EXPECT_EQ(c.chart_js, "/opt/chart.min.js");
  EXPECT_EQ(c.peer_dirs.at("vm"), "/srv/vm");
  EXPECT_EQ(c.peer_dirs.at("laptop"), "/srv/laptop");
}

TEST(ServeConfig, AcceptFromWords) {
  EXPECT_EQ(parsed("[accept]\nfrom = \"none\"\n").accept_from, AcceptFrom::none);
  EXPECT_EQ(parsed("[accept]\nfrom = \"pinned\"\n").accept_from, AcceptFrom::pinned);
}

TEST(ServeConfig, MistakesNameTheKeyAndTheLine) {
  EXPECT_EQ(error_of("[receive]\n\ndirr = \"/x\"\n"),
            "serve.toml:3: key 'receive.dirr': unknown key (receive has listen, dir, links, clean_after, announce)");
  EXPECT_EQ(error_of("[limits]\nmax_sessions = \"many\"\n"), "serve.toml:2: key 'limits.max_sessions': must be a whole number");
  EXPECT_EQ(error_of("[limits]\nmax_lanes = 0\n"), "serve.toml:2: key 'limits.max_lanes': must be 1..1024");
  EXPECT_NE(error_of("[receive]\nlisten = \"nowhere\"\n").find("serve.toml:2: key 'receive.listen': 'nowhere' is not ADDR:PORT"),
            std::string::npos);
  EXPECT_NE(error_of("[accept]\ntimeout = \"soon\"\n").find("serve.toml:2: key 'accept.timeout': must be a time"),
            std::string::npos);
  EXPECT_NE(error_of("[accept]\nfrom = \"everyone\"\n").find("key 'accept.from'"), std::string::npos);
  EXPECT_NE(error_of("[limits]\ndisk_reserve = \"lots\"\n").find("key 'limits.disk_reserve': must be a size"),
            std::string::npos);
  EXPECT_NE(error_of("[peers.vm]\ndir = 3\n").find("serve.toml:2: key 'peers.vm.dir': must be a string"), std::string::npos);
  EXPECT_NE(error_of("colour = \"blue\"\n").find("serve.toml:1: key 'colour': unknown key"), std::string::npos);
  EXPECT_NE(error_of("receive = 3\n").find("key 'receive': must be a table"), std::string::npos);
}

TEST(ServeConfig, ShareSection) {
  const ServeConfig d = parsed("");
  EXPECT_EQ(d.share_listen, "0.0.0.0:7880");
  EXPECT_EQ(d.share_upload_max, 4ull << 30);
  EXPECT_TRUE(d.share_paths.empty() && d.share_upload_dir.empty() && d.share_cert.empty());
  const ServeConfig c = parsed(
      "[share]\npaths = [\"/srv/a\", \"/srv/b\"]\nlisten = \"0.0.0.0:0\"\naddresses = [\"192.168.1.5\", \"10.0.0.2\"]\n"
      "upload_dir = \"/srv/up\"\nupload_max = \"1GiB\"\ncert = \"/c.pem\"\nkey = \"/k.pem\"\n");
  EXPECT_EQ(c.share_paths, (std::vector<std::string>{"/srv/a", "/srv/b"}));
  EXPECT_EQ(c.share_listen, "0.0.0.0:0");
  EXPECT_EQ(c.share_addresses, (std::vector<std::string>{"192.168.1.5", "10.0.0.2"}));
  EXPECT_EQ(c.share_upload_dir, "/srv/up");
  EXPECT_EQ(c.share_upload_max, 1ull << 30);
  EXPECT_EQ(c.share_cert, "/c.pem");
  EXPECT_EQ(c.share_key, "/k.pem");
  EXPECT_NE(error_of("[share]\ncert = \"/c.pem\"\n").find("HTTPS needs both cert and key"), std::string::npos);
  EXPECT_NE(error_of("[share]\nlisten = \"x\"\n").find("serve.toml:2: key 'share.listen'"), std::string::npos);
  EXPECT_NE(error_of("[share]\nupload = 1\n").find("unknown key (share has paths"), std::string::npos);
}

TEST(ServeConfig, TomlSyntaxErrorsGiveTheLine) {
  const std::string e = error_of("[receive]\ndir = \"/x\n");
  EXPECT_EQ(e.rfind("serve.toml:2: ", 0), 0u) << e;
}

}  // namespace
}  // namespace braid::serve
