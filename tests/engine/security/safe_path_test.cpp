#include "engine/security/safe_path.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "test_support.h"

namespace braid::security {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

}  // namespace

// Readable parameter names in test listings.
void PrintTo(Resolver r, std::ostream* os) {
  *os << (r == Resolver::automatic ? "automatic" : r == Resolver::openat2_only ? "openat2" : "per_component");
}

namespace {

bool is_empty_dir(const fs::path& p) { return fs::is_empty(p); }

TEST(SafePath, RejectsEscapesAndOddComponents) {
  const std::string long_name(256, 'x');
  for (const std::string& bad : std::vector<std::string>{"", "/etc/x", "../x", "a/../../b", "a/..", "..", "./a", "a/./b", ".", "a//b", "a/", "/",
                          std::string("a\0b", 3), long_name, "ok/" + long_name}) {
    auto p = RelativePath::parse(bad);
    ASSERT_FALSE(p) << printable_path(bad);
    EXPECT_EQ(p.error().code, Errc::path_invalid);
    EXPECT_FALSE(p.error().message.empty());
  }
  std::string too_long;
  while (too_long.size() <= kMaxPathLength) too_long += "abcdefgh/";
  too_long += "z";
  EXPECT_FALSE(RelativePath::parse(too_long));
}

TEST(SafePath, MessagesSayWhatIsWrong) {
  EXPECT_NE(RelativePath::parse("/etc/x").error().message.find("absolute"), std::string::npos);
  EXPECT_NE(RelativePath::parse("a/../../b").error().message.find("'..'"), std::string::npos);
  // A name meant to mess with the terminal is shown escaped.
  auto p = RelativePath::parse("../\x1b[2J");
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().message.find('\x1b'), std::string::npos);
  EXPECT_NE(p.error().message.find("\\x1b"), std::string::npos);
}

TEST(SafePath, AcceptsOddButValidNames) {
  const std::string max_name(255, 'y');
  for (const std::string& ok : std::vector<std::string>{"plain", "with space", "new\nline", "tab\there", "\xff\xfe not utf-8", "ünïcödé/日本語.txt",
                         "back\\slash", "...", "..a", "a..", ".hidden", "-dash", "a/b/c/d", max_name, "~", "*?[]"}) {
    auto p = RelativePath::parse(ok);
    ASSERT_TRUE(p) << printable_path(ok) << ": " << p.error().message;
    EXPECT_EQ(p.value().str(), ok);
  }
  EXPECT_EQ(RelativePath::parse("a/b/c").value().components().size(), 3u);
}

class Beneath : public ::testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    root = tmp.path() / "dest";
    outside = tmp.path() / "outside";
    fs::create_directories(root);
    fs::create_directories(outside);
    root_fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(root_fd, 0);
  }
  void TearDown() override { ::close(root_fd); }

  Result<UniqueFd> create(const std::string& rel) {
    auto p = RelativePath::parse(rel);
    EXPECT_TRUE(p) << p.error().message;
    auto parent = open_parent_beneath(root_fd, p.value(), true);
    if (!parent) return parent.error();
    return open_beneath(root_fd, p.value(), O_WRONLY | O_CREAT | O_EXCL, 0644, GetParam());
  }

  TempDir tmp;
  fs::path root, outside;
  int root_fd = -1;
};

TEST_P(Beneath, CreatesOddNamesInsideTheDestination) {
  for (std::string rel : {"plain.txt", "dir with space/new\nline", "\xff\xfe/ünï/日本語", "a/b/c/d/e.bin"}) {
    auto fd = create(rel);
    ASSERT_TRUE(fd) << printable_path(rel) << ": " << fd.error().message;
    ASSERT_EQ(::write(fd.value().get(), "x", 1), 1);
    EXPECT_TRUE(fs::is_regular_file(root / rel)) << printable_path(rel);
  }
  EXPECT_TRUE(is_empty_dir(outside));
}

TEST_P(Beneath, SymlinkedDirectoryComponentIsRejected) {
  fs::create_directory_symlink(outside, root / "link");
  fs::create_directories(root / "real");
  fs::create_directory_symlink(outside, root / "real" / "deeper");
  for (std::string rel : {"link/x", "link/sub/x", "real/deeper/x"}) {
    auto p = RelativePath::parse(rel).value();
    auto fd = open_beneath(root_fd, p, O_WRONLY | O_CREAT, 0644, GetParam());
    ASSERT_FALSE(fd) << rel;
    EXPECT_EQ(fd.error().code, Errc::path_symlink) << fd.error().message;
    EXPECT_NE(fd.error().message.find("symlink"), std::string::npos);
    auto parent = open_parent_beneath(root_fd, p, true);
    ASSERT_FALSE(parent) << rel;
    EXPECT_EQ(parent.error().code, Errc::path_symlink) << parent.error().message;
  }
  auto dirs = make_dirs_beneath(root_fd, RelativePath::parse("link/made").value());
  ASSERT_FALSE(dirs);
  EXPECT_EQ(dirs.error().code, Errc::path_symlink);
  EXPECT_TRUE(is_empty_dir(outside));
}

TEST_P(Beneath, SymlinkAsTheFileItselfIsRejected) {
  std::ofstream(outside / "victim") << "keep me";
  fs::create_symlink(outside / "victim", root / "file");
  auto p = RelativePath::parse("file").value();
  for (int flags : {O_WRONLY | O_CREAT | O_TRUNC, O_WRONLY | O_CREAT | O_EXCL, O_RDONLY}) {
    auto fd = open_beneath(root_fd, p, flags, 0644, GetParam());
    ASSERT_FALSE(fd);
    EXPECT_EQ(fd.error().code, Errc::path_symlink) << fd.error().message;
  }
  std::ifstream in(outside / "victim");
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "keep me");
}

TEST_P(Beneath, FileInTheWayOfADirectoryIsNotADirectory) {
  std::ofstream(root / "plain") << "x";
  auto fd = open_beneath(root_fd, RelativePath::parse("plain/x").value(), O_WRONLY | O_CREAT, 0644, GetParam());
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, Errc::path_not_directory) << fd.error().message;
  auto dirs = make_dirs_beneath(root_fd, RelativePath::parse("plain/y").value());
  ASSERT_FALSE(dirs);
  EXPECT_EQ(dirs.error().code, Errc::path_not_directory) << dirs.error().message;
}

TEST_P(Beneath, ExistingFileWithExclIsReported) {
  ASSERT_TRUE(create("once"));
  auto again = open_beneath(root_fd, RelativePath::parse("once").value(), O_WRONLY | O_CREAT | O_EXCL, 0644, GetParam());
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Errc::io_error);
  EXPECT_NE(again.error().message.find("already exists"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Resolvers, Beneath,
                         ::testing::Values(Resolver::automatic, Resolver::openat2_only, Resolver::per_component),
                         [](const auto& info) {
                           switch (info.param) {
                             case Resolver::automatic: return std::string("automatic");
                             case Resolver::openat2_only: return std::string("openat2");
                             case Resolver::per_component: return std::string("per_component");
                           }
                           return std::string("unknown");
                         });

TEST(SafePath, MakeDirsReusesExistingDirectories) {
  TempDir tmp;
  int root_fd = ::open(tmp.path().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(root_fd, 0);
  auto p = RelativePath::parse("a/b/c").value();
  ASSERT_TRUE(make_dirs_beneath(root_fd, p, 0750));
  ASSERT_TRUE(make_dirs_beneath(root_fd, p, 0750));
  EXPECT_TRUE(fs::is_directory(tmp.path() / "a" / "b" / "c"));
  auto parent = open_parent_beneath(root_fd, RelativePath::parse("a/b/c/file").value(), false);
  ASSERT_TRUE(parent);
  EXPECT_EQ(parent.value().leaf, "file");
  ::close(root_fd);
}

}  // namespace
}  // namespace braid::security
