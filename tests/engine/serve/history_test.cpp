// braid serve's history on disk: what is kept, listed and read back, and
// retention by count and by age (time given, not read from a clock).
#include "engine/serve/history.hpp"

#include <gtest/gtest.h>

#include <fstream>

namespace braid::serve {
namespace {

using namespace std::chrono;

struct HistoryTest : ::testing::Test {
  std::filesystem::path dir;
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("braid-history-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
};

transfer::TransferReport report(const std::string& peer, uint64_t bytes) {
  transfer::TransferReport r;
  r.role = "recv";
  r.peer = peer;
  r.files = 2;
  r.bytes = bytes;
  r.seconds = 1.5;
  r.rate_bytes_per_sec = static_cast<double>(bytes) / 1.5;
  r.verified = true;
  r.status = "verified";
  return r;
}

const History::SystemTime t0 = History::SystemTime(seconds(1'800'000'000));

TEST_F(HistoryTest, KeepsListsAndReadsBack) {
  History h(dir, 10, hours(24));
  ASSERT_EQ(h.open(t0), "");
  EXPECT_EQ(h.add(report("vm", 1000), t0), 1u);
  EXPECT_EQ(h.add(report("laptop", 2000), t0 + seconds(5)), 2u);
  const auto list = History::list(dir);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].peer, "vm");
  EXPECT_EQ(list[1].peer, "laptop");
  EXPECT_EQ(list[1].bytes, 2000u);
  EXPECT_EQ(list[1].time, 1'800'000'005);
  EXPECT_EQ(list[1].status, "verified");
  const auto doc = History::get(dir, 2);
  ASSERT_TRUE(doc);
  EXPECT_EQ((*doc)["peer"], "laptop");                 // the report as --json writes it
  EXPECT_EQ((*doc)["history"]["id"], 2);               // and its summary
  EXPECT_FALSE(History::get(dir, 3));
  EXPECT_EQ(std::filesystem::status(dir).permissions() & std::filesystem::perms::all, std::filesystem::perms::owner_all);
}

TEST_F(HistoryTest, RetentionByCountDropsTheOldest) {
  History h(dir, 3, hours(24));
  ASSERT_EQ(h.open(t0), "");
  for (int i = 0; i < 5; ++i) h.add(report("p" + std::to_string(i), 10), t0 + seconds(i));
  const auto list = History::list(dir);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list.front().id, 3u);
  EXPECT_EQ(list.back().id, 5u);
  EXPECT_FALSE(History::get(dir, 1));  // its file is gone too
  EXPECT_FALSE(History::get(dir, 2));
  EXPECT_TRUE(History::get(dir, 3));
}

TEST_F(HistoryTest, RetentionByAgeAtAddAndAtOpen) {
  {
    History h(dir, 100, hours(1));
    ASSERT_EQ(h.open(t0), "");
    h.add(report("old", 1), t0);
    h.add(report("newer", 1), t0 + minutes(40));
    h.add(report("newest", 1), t0 + minutes(70));  // "old" is now 70 min old
    const auto list = History::list(dir);
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].peer, "newer");
  }
  History again(dir, 100, hours(1));
  ASSERT_EQ(again.open(t0 + minutes(105)), "");  // "newer" is 65 min old at this start
  const auto list = History::list(dir);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].peer, "newest");
  EXPECT_EQ(again.add(report("next", 1), t0 + minutes(106)), 4u);  // ids go on after a restart
}

TEST_F(HistoryTest, ACutIndexLineIsSkipped) {
  History h(dir, 10, hours(24));
  ASSERT_EQ(h.open(t0), "");
  h.add(report("vm", 1), t0);
  std::ofstream(dir / "index.jsonl", std::ios::app) << "{\"id\": 2, \"ti";  // a crash mid-append
  const auto list = History::list(dir);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].peer, "vm");
}

}  // namespace
}  // namespace braid::serve
