// Sync's look at the target (files/sync_target.hpp) and the receive tree's
// part in it: what a stat sees, what --delete lists and removes — never
// through a link, never outside the offered directories — and the old
// version's bytes copied into a new file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/files/receive_tree.hpp"
#include "scratch_target.hpp"
#include "engine/files/sync_target.hpp"

namespace braid::files {
namespace {

namespace fs = std::filesystem;

// Paths relative to the scratch root; the target is `target/`.
class Dir : public testing::ScratchTarget {
 public:
  Dir() : ScratchTarget("sync") {}
  void file(const std::string& rel, const std::string& text) const { put(rel, text); }
};

using testing::entry;

TEST(SyncTarget, AStatSeesFilesAndNeverFollowsALink) {
  Dir d;
  d.file("target/t/a", "12345");
  d.file("outside/secret", "xx");
  fs::create_symlink(d.at("outside/secret"), d.at("target/t/link"));
  fs::create_symlink(d.at("outside"), d.at("target/t/up"));
  TargetStat stat(d.fd());
  const FoundFile a = stat.at("t/a");
  EXPECT_EQ(a.kind, 1);
  EXPECT_EQ(a.size, 5u);
  EXPECT_EQ(stat.at("t/link").kind, 2);      // the link itself, not the file it names
  EXPECT_EQ(stat.at("t/up/secret").kind, 0);  // not through a linked directory
  EXPECT_EQ(stat.at("t/none").kind, 0);
  EXPECT_EQ(stat.at("no/such/dir/x").kind, 0);
  EXPECT_EQ(stat_beneath(d.fd(), "t/a").size, 5u);
  EXPECT_EQ(stat_beneath(d.fd(), "t/up/secret").kind, 0);
}

TEST(SyncTarget, DeleteListsOnlyTheOfferedDirectoriesAndRemovesNoFurther) {
  Dir d;
  d.file("target/t/keep", "k");
  d.file("target/t/stale", "s");
  d.file("target/t/sub/deep/junk", "j");
  d.file("target/t/.braid-0123456789abcdef-1.part", "p");
  d.file("target/beside", "b");
  d.file("outside/precious", "p");
  fs::create_symlink(d.at("outside"), d.at("target/t/escape"));
  wire::Offer o;
  o.entries = {entry(wire::EntryKind::directory, "t"), entry(wire::EntryKind::file, "t/keep", 1)};
  const auto extra = find_extraneous(d.fd(), o);
  EXPECT_EQ(extra, (std::vector<std::string>{"t/escape", "t/stale", "t/sub"}));
  uint64_t removed = 0;
  for (const auto& x : extra) EXPECT_EQ(remove_tree_beneath(d.fd(), x, removed), "");
  EXPECT_EQ(removed, 5u);  // escape, stale, junk, deep, sub
  EXPECT_TRUE(fs::exists(d.at("outside/precious")));
  EXPECT_TRUE(fs::exists(d.at("target/beside")));
  EXPECT_TRUE(fs::exists(d.at("target/t/keep")));
  EXPECT_TRUE(fs::exists(d.at("target/t/.braid-0123456789abcdef-1.part")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(d.at("target/t/escape"))));
  // A path that leads through a link is refused, not followed.
  fs::create_symlink(d.at("outside"), d.at("target/t/escape2"));
  EXPECT_NE(remove_tree_beneath(d.fd(), "t/escape2/precious", removed), "");
  EXPECT_TRUE(fs::exists(d.at("outside/precious")));
}

TEST(SyncTarget, TheOldVersionsBytesAreCopiedInAndAnIdenticalFileStays) {
  Dir d;
  d.file("target/a", "hello, old world");
  d.file("target/b", "same");
  wire::Offer o;
  o.chunk_size = 1 << 20;
  o.entries = {entry(wire::EntryKind::file, "a", 16), entry(wire::EntryKind::file, "b", 4),
               entry(wire::EntryKind::file, "c", 3)};
  auto prepared = ReceiveTree::prepare(d.fd(), o, PrepareOptions{"00aa", false, 0, LinkPolicy::safe, {false, false, true}});
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<ReceiveTree>>(prepared));
  auto& tree = *std::get<0>(prepared);
  EXPECT_FALSE(fs::exists(d.at("target/.braid-00aa-2.part")));  // c is kept: no temporary file
  // a: "hello, " and " world" from the old version, "new" sent.
  ASSERT_EQ(tree.copy_from_existing(0, 0, 7), 0);
  ASSERT_EQ(tree.copy_from_existing(0, 10, 6), 0);
  const std::string fresh = "new";
  ASSERT_EQ(tree.write(7, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(fresh.data()), 3)), 0);
  struct stat before {};
  ASSERT_EQ(::stat(d.at("target/b").c_str(), &before), 0);
  tree.keep_existing(1);
  int err = 0;
  ASSERT_EQ(tree.finalize(err), "");
  std::ifstream a(d.at("target/a"));
  std::string got((std::istreambuf_iterator<char>(a)), {});
  EXPECT_EQ(got, "hello, new world");
  struct stat after {};
  ASSERT_EQ(::stat(d.at("target/b").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // left in place
  EXPECT_FALSE(fs::exists(d.at("target/.braid-00aa-1.part")));
  EXPECT_FALSE(fs::exists(d.at("target/c")));  // kept: nothing was there, nothing made
}

TEST(ReceiveTreeLinks, AHardLinkIsAnotherNameOfItsFileBeneathTheTarget) {
  Dir d;
  d.file("target/t/sub/b", "an older file under the link's name");
  d.file("outside/secret", "xx");
  wire::Offer o;
  o.chunk_size = 1 << 20;
  o.entries = {entry(wire::EntryKind::directory, "t"), entry(wire::EntryKind::file, "t/a", 5),
               entry(wire::EntryKind::directory, "t/sub"), entry(wire::EntryKind::file, "t/sub/b"),
               entry(wire::EntryKind::file, "t/c")};
  o.entries[3].hard_link_to = 1;
  o.entries[4].hard_link_to = 1;
  auto prepared = ReceiveTree::prepare(d.fd(), o, PrepareOptions{"00bb", false, 0});
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<ReceiveTree>>(prepared));
  auto& tree = *std::get<0>(prepared);
  EXPECT_FALSE(fs::exists(d.at("target/t/sub/.braid-00bb-3.part")));  // a link gets no temporary file
  const std::string bytes = "hello";
  ASSERT_EQ(tree.write(0, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), 5)), 0);
  int err = 0;
  ASSERT_EQ(tree.finalize(err), "");
  struct stat a {}, b {}, c {};
  ASSERT_EQ(::stat(d.at("target/t/a").c_str(), &a), 0);
  ASSERT_EQ(::stat(d.at("target/t/sub/b").c_str(), &b), 0);
  ASSERT_EQ(::stat(d.at("target/t/c").c_str(), &c), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_ino, c.st_ino);
  EXPECT_EQ(a.st_nlink, 3u);
  std::ifstream in(d.at("target/t/sub/b"));
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "hello");
  for (const auto& e : fs::recursive_directory_iterator(d.at("target")))
    EXPECT_EQ(e.path().filename().string().rfind(".braid-", 0), std::string::npos) << e.path();

  // Where the link's name is a directory, the offer is refused before anything is written.
  fs::remove(d.at("target/t/c"));
  fs::create_directories(d.at("target/t/c"));
  auto refused = ReceiveTree::prepare(d.fd(), o, PrepareOptions{"00bc", false, 0});
  ASSERT_TRUE(std::holds_alternative<PrepareError>(refused));
  EXPECT_EQ(std::get<PrepareError>(refused).reason, wire::RefuseReason::bad_offer);
}

}  // namespace
}  // namespace braid::files
