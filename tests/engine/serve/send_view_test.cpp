// The dashboard's send view and paths view apart from HTTP: a path from a
// page stays inside its root (.., absolute paths, symlinks out, a missing
// root refused), a listing's order and contents, the launcher's refusals
// before any process starts, and the paths view reading the newest probe
// report. Sending for real, through the page, is integration.serve.views_browser.
#include "engine/serve/send_view.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "engine/serve/serve_config.hpp"

namespace braid::serve {
namespace {
namespace fs = std::filesystem;

struct SendViewTest : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("braid-send-view-test-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir / "root/sub/deeper");
    fs::create_directories(dir / "outside");
    std::ofstream(dir / "root/b.txt") << "bb";
    std::ofstream(dir / "root/a.txt") << "a";
    std::ofstream(dir / "root/sub/c.bin") << "ccc";
    std::ofstream(dir / "outside/secret") << "no";
    fs::create_directory_symlink(dir / "outside", dir / "root/out-link");
    fs::create_directory_symlink(dir / "root/sub", dir / "root/in-link");
  }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(SendViewTest, PathsStayInsideTheirRoot) {
  SendRoots roots({(dir / "root").string(), (dir / "missing").string()});
  ASSERT_EQ(roots.roots().size(), 1u);
  ASSERT_EQ(roots.problems().size(), 1u);  // the missing root is said, not kept
  std::string why;
  EXPECT_EQ(roots.resolve(0, "sub/c.bin", why), fs::canonical(dir / "root/sub/c.bin"));
  EXPECT_EQ(roots.resolve(0, "", why), fs::canonical(dir / "root"));
  EXPECT_EQ(roots.resolve(0, "in-link/c.bin", why), fs::canonical(dir / "root/sub/c.bin"));  // a link that stays in
  for (const std::string bad : {"..", "../outside/secret", "sub/../../outside", "/etc/passwd", "out-link",
                                "out-link/secret", "nope"}) {
    why.clear();
    EXPECT_TRUE(roots.resolve(0, bad, why).empty()) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  EXPECT_TRUE(roots.resolve(1, "a.txt", why).empty());  // no root 1
  // A sibling whose name starts like the root is not inside it.
  fs::create_directories(dir / "root2");
  fs::create_directory_symlink(dir / "root2", dir / "root/twin");
  EXPECT_TRUE(roots.resolve(0, "twin", why).empty());
}

TEST_F(SendViewTest, ListsDirectoriesFirstThenByName) {
  SendRoots roots({(dir / "root").string()});
  const auto j = roots.list(0, "");
  ASSERT_FALSE(j.contains("error")) << j.dump();
  std::vector<std::string> names;
  for (const auto& e : j["entries"]) names.push_back(e["name"]);
  // out-link is a directory link: listed (it names something), but opening it is refused.
  EXPECT_EQ(names, (std::vector<std::string>{"in-link", "out-link", "sub", "a.txt", "b.txt"}));
  EXPECT_EQ(j["entries"][4]["size"], 2);
  EXPECT_TRUE(roots.list(0, "out-link").contains("error"));
  EXPECT_TRUE(roots.list(0, "a.txt").contains("error"));  // not a directory
  EXPECT_EQ(roots.list(0, "sub")["entries"].size(), 2u);
}

TEST_F(SendViewTest, LauncherRefusesBeforeStartingAnything) {
  SendRoots none({});
  SendLauncher no_roots(none, dir / "sends");
  EXPECT_TRUE(no_roots.start({{"root", 0}, {"paths", {"a.txt"}}, {"to", "127.0.0.1:1"}}).contains("error"));
  SendRoots roots({(dir / "root").string()});
  SendLauncher l(roots, dir / "sends");
  for (const nlohmann::json& bad : std::vector<nlohmann::json>{
           nlohmann::json::object(), {{"root", 0}, {"paths", nlohmann::json::array()}, {"to", "h:1"}},
           {{"root", 0}, {"paths", {"a.txt"}}, {"to", "--rate-limit=1"}},  // a flag, not a peer
           {{"root", 0}, {"paths", {"a.txt"}}, {"to", "a b"}},
           {{"root", 0}, {"paths", {"../outside/secret"}}, {"to", "h:1"}},
           {{"root", 0}, {"paths", {"out-link/secret"}}, {"to", "h:1"}},
           {{"root", 3}, {"paths", {"a.txt"}}, {"to", "h:1"}}}) {
    EXPECT_TRUE(l.start(bad).contains("error")) << bad.dump();
  }
  EXPECT_TRUE(l.list().empty());
}

TEST_F(SendViewTest, PathsViewShowsTheNewestProbe) {
  const fs::path probes = dir / "probes";
  auto view = paths_view(probes);  // no directory yet: interfaces, no probe
  EXPECT_TRUE(view["probe"].is_null());
  bool lo = false;
  for (const auto& i : view["interfaces"]) lo |= i["loopback"].get<bool>();
  EXPECT_TRUE(lo);
  fs::create_directories(probes);
  auto probe = [](double mbit, double rtt) {
    return nlohmann::json{{"role", "probe"},
                          {"peer", "box"},
                          {"paths",
                           {{{"name", "eth0"},
                             {"interface", "eth0"},
                             {"remote", "10.0.0.2"},
                             {"idle_rtt_ms", rtt},
                             {"added_delay_p50_ms", 1.5},
                             {"alone", {{"mbit_per_second", mbit}, {"rtt_loaded_p50_ms", rtt + 1.5}}}}}}};
  };
  std::ofstream(probes / "old.json") << probe(100, 2).dump();
  std::ofstream(probes / "notes.txt") << "not a probe";
  std::ofstream(probes / "new.json") << probe(250, 0.5).dump();
  fs::last_write_time(probes / "old.json", fs::file_time_type::clock::now() - std::chrono::hours(1));
  view = paths_view(probes);
  ASSERT_FALSE(view["probe"].is_null());
  EXPECT_EQ(view["probe"]["file"], "new.json");
  EXPECT_EQ(view["probe"]["peer"], "box");
  ASSERT_EQ(view["probe"]["paths"].size(), 1u);
  EXPECT_DOUBLE_EQ(view["probe"]["paths"][0]["capacity_mbit"].get<double>(), 250);
  EXPECT_DOUBLE_EQ(view["probe"]["paths"][0]["idle_rtt_ms"].get<double>(), 0.5);
  EXPECT_EQ(view["probe"]["paths"][0]["interface"], "eth0");
}

TEST(SendConfig, RootsMustBeAbsolute) {
  auto ok = parse_serve_config("[send]\nroots = [\"/srv/out\", \"/home/me/share\"]\n", "t.toml");
  ASSERT_TRUE(std::holds_alternative<ServeConfig>(ok));
  EXPECT_EQ(std::get<ServeConfig>(ok).send_roots.size(), 2u);
  auto rel = parse_serve_config("[send]\nroots = \"out\"\n", "t.toml");
  ASSERT_TRUE(std::holds_alternative<ConfigError>(rel));
  EXPECT_NE(std::get<ConfigError>(rel).message.find("send.roots"), std::string::npos);
  auto typo = parse_serve_config("[send]\nroot = \"/x\"\n", "t.toml");
  ASSERT_TRUE(std::holds_alternative<ConfigError>(typo));
}

}  // namespace
}  // namespace braid::serve
