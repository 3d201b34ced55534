// Owner, group and xattrs of an entry: the receiver's id for a name (and the
// sender's id when the name means nothing here), the scan's xattr classes,
// and applying a list makes its classes exactly the list. xattrs need a file
// system that keeps user.* ones (tmpfs since Linux 6.6, ext4, xfs): skipped
// with the reason otherwise.
#include "engine/files/entry_metadata.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/files/source_tree.hpp"

namespace braid::files {
namespace {

namespace fs = std::filesystem;

TEST(EntryMetadata, NamesWinOverIdsAndUnknownNamesFallBackToTheId) {
  IdMapper ids;
  EXPECT_EQ(ids.uid(wire::OwnerId{4242, "root"}), 0u);  // this system's root, whatever id the sender had
  EXPECT_EQ(ids.gid(wire::OwnerId{4242, "root"}), 0u);
  EXPECT_EQ(ids.uid(wire::OwnerId{4242, "no-such-user-braid-test"}), 4242u);
  EXPECT_EQ(ids.gid(wire::OwnerId{4243, "no-such-group-braid-test"}), 4243u);
  EXPECT_EQ(ids.uid(wire::OwnerId{4244, ""}), 4244u);  // --numeric-ids
  IdNames names;
  EXPECT_EQ(names.user(0), "root");
  EXPECT_EQ(names.group(0), "root");
}

class Scratch {
 public:
  Scratch() {
    std::string tmpl = fs::temp_directory_path().string() + "/braid-md-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~Scratch() { fs::remove_all(path_); }
  fs::path operator/(const std::string& p) const { return path_ / p; }

 private:
  fs::path path_;
};

bool set(const fs::path& p, const char* name, const std::string& v) {
  return ::setxattr(p.c_str(), name, v.data(), v.size(), 0) == 0;
}

TEST(EntryMetadata, ScanTakesTheAskedClassesSortedAndApplyMakesThemExact) {
  Scratch s;
  const fs::path f = s / "f";
  { std::ofstream(f) << "x"; }
  if (!set(f, "user.zeta", "1")) GTEST_SKIP() << "the scratch file system keeps no user.* xattrs: " << std::strerror(errno);
  ASSERT_TRUE(set(f, "user.alpha", std::string("\0\xff", 2)));
  fs::create_directory(s / "d");
  ASSERT_TRUE(set(s / "d", "user.dir", "d"));

  ScanOptions opts;
  opts.metadata.xattrs = true;
  opts.metadata.owner = opts.metadata.group = true;
  auto scan = scan_sources({f.string(), (s / "d").string()}, opts);
  ASSERT_TRUE(scan.ok()) << scan.error;
  ASSERT_EQ(scan.tree.entries.size(), 2u);
  // The operands go by name (path order): d, then f.
  ASSERT_EQ(scan.tree.entries[0].path, "d");
  const auto& e = scan.tree.entries[1];
  ASSERT_TRUE(e.xattrs);
  EXPECT_TRUE(e.xattrs->with_xattrs);
  EXPECT_FALSE(e.xattrs->with_acls);
  ASSERT_EQ(e.xattrs->items.size(), 2u);
  EXPECT_EQ(e.xattrs->items[0], (wire::Xattr{"user.alpha", std::string("\0\xff", 2)}));
  EXPECT_EQ(e.xattrs->items[1], (wire::Xattr{"user.zeta", "1"}));
  ASSERT_TRUE(e.owner && e.group);
  EXPECT_EQ(e.owner->id, ::geteuid());
  ASSERT_TRUE(scan.tree.entries[0].xattrs);
  EXPECT_EQ(scan.tree.entries[0].xattrs->items, (std::vector<wire::Xattr>{{"user.dir", "d"}}));

  // Without -X: none read.
  auto plain = scan_sources({f.string()}, ScanOptions{});
  EXPECT_FALSE(plain.tree.entries[0].xattrs);
  EXPECT_FALSE(plain.tree.entries[0].owner);

  // Applying: user.zeta goes (not in the list), user.new comes, user.alpha changes.
  const fs::path g = s / "g";
  { std::ofstream(g) << "y"; }
  ASSERT_TRUE(set(g, "user.zeta", "old"));
  ASSERT_TRUE(set(g, "user.alpha", "old"));
  const int fd = ::open(g.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(apply_xattrs(fd, wire::XattrList{true, false, {{"user.alpha", "new"}, {"user.new", "n"}}}), "");
  std::string why;
  auto now = read_xattrs(fd, MetadataOptions{false, false, false, true, false}, why);
  ASSERT_TRUE(now) << why;
  EXPECT_EQ(now->items, (std::vector<wire::Xattr>{{"user.alpha", "new"}, {"user.new", "n"}}));
  // An ACL-only list leaves the xattrs alone.
  EXPECT_EQ(apply_xattrs(fd, wire::XattrList{false, true, {}}), "");
  now = read_xattrs(fd, MetadataOptions{false, false, false, true, false}, why);
  EXPECT_EQ(now->items.size(), 2u);
  ::close(fd);
}

}  // namespace
}  // namespace braid::files
