// Backups at the receiver (files/backup.hpp): the old version kept as
// another name before a new one replaces it, moved aside instead of
// deleted, never itself deleted by --delete, and a finalize that fails
// half-way leaving each name its old or its new version with every backup
// the old one.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/files/backup.hpp"
#include "scratch_target.hpp"
#include "engine/files/receive_tree.hpp"
#include "engine/files/sync_target.hpp"

namespace braid::files {
namespace {

namespace fs = std::filesystem;

// Paths relative to the target.
class Dir : public testing::ScratchTarget {
 public:
  Dir() : ScratchTarget("backup") {}
  void file(const std::string& rel, const std::string& text) const { put("target/" + rel, text); }
  std::string read(const std::string& rel) const {
    std::ifstream in(at("target/" + rel));
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }
  bool exists(const std::string& rel) const { return fs::exists(fs::symlink_status(at("target/" + rel))); }
  fs::path path() const { return at("target"); }
};

using testing::entry;

std::span<const uint8_t> bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

TEST(Backup, NamesChecksAndWhatDeleteLeavesAlone) {
  const BackupOptions beside{"~", ""}, under{"", "old"}, both{".bak", "old/days"};
  EXPECT_EQ(backup_path(beside, "t/a"), "t/a~");
  EXPECT_EQ(backup_path(under, "t/a"), "old/t/a");
  EXPECT_EQ(backup_path(both, "a"), "old/days/a.bak");
  EXPECT_TRUE(is_backup(beside, "t/a~"));
  EXPECT_FALSE(is_backup(beside, "t/a"));
  EXPECT_TRUE(is_backup(under, "old"));
  EXPECT_TRUE(is_backup(under, "old/t/a"));
  EXPECT_FALSE(is_backup(under, "older"));
  EXPECT_TRUE(is_backup(both, "old"));  // holds the backup directory
  EXPECT_FALSE(is_backup(both, "x.bak"));  // with a directory, the suffix marks nothing
  EXPECT_EQ(check_backup_options(beside), "");
  EXPECT_EQ(check_backup_options(both), "");
  for (const char* bad : {"../up", "/abs", "a//b", "x/.braid-1234.dir"})
    EXPECT_NE(check_backup_options({"", bad}), "") << bad;
  EXPECT_NE(check_backup_options({"a/b", ""}), "");
}

TEST(Backup, TheOldVersionIsAnotherNameOfTheSameFileAndTheOriginalStays) {
  Dir d;
  d.file("t/a", "old a");
  std::string made_in;
  ASSERT_EQ(keep_backup(d.fd(), {"~", ""}, "t/a", ".braid-00aa-0.bak", &made_in), "");
  EXPECT_EQ(made_in, "t");
  EXPECT_EQ(d.read("t/a"), "old a");
  EXPECT_EQ(d.read("t/a~"), "old a");
  struct stat a {}, b {};
  ASSERT_EQ(::fstatat(d.fd(), "t/a", &a, 0), 0);
  ASSERT_EQ(::fstatat(d.fd(), "t/a~", &b, 0), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);  // a link, not a copy: no bytes written
  // An older backup there is replaced; under a directory the path is made.
  // A run stopped between its backups and its renames: the backup is the
  // file itself under a second name; the temporary name is not left behind.
  ASSERT_EQ(keep_backup(d.fd(), {"~", ""}, "t/a", ".braid-00aa-0.bak", nullptr), "");
  EXPECT_FALSE(d.exists("t/.braid-00aa-0.bak"));
  // A new version replaced it (a new file, as finalize's rename makes one).
  fs::remove(fs::path(d.path()) / "t/a");
  d.file("t/a", "newer a");
  ASSERT_EQ(keep_backup(d.fd(), {"~", ""}, "t/a", ".braid-00aa-0.bak", nullptr), "");
  EXPECT_EQ(d.read("t/a~"), "newer a");
  ASSERT_EQ(keep_backup(d.fd(), {"", "old"}, "t/a", ".braid-00aa-0.bak", &made_in), "");
  EXPECT_EQ(made_in, "old/t");
  EXPECT_EQ(d.read("old/t/a"), "newer a");
  // Nothing there: nothing made.
  ASSERT_EQ(keep_backup(d.fd(), {"~", ""}, "t/none", ".braid-00aa-1.bak", nullptr), "");
  EXPECT_FALSE(d.exists("t/none~"));
  EXPECT_FALSE(d.exists("t/.braid-00aa-0.bak"));
}

TEST(Backup, ADeletedEntryMovesWholeAndBackupsAreNeverExtraneous) {
  Dir d;
  d.file("t/keep", "k");
  d.file("t/gone", "g");
  d.file("t/dir/x", "x");
  d.file("t/earlier~", "an older backup");
  d.file("t/old/t/y", "under the backup directory");
  wire::Offer o;
  o.entries = {entry(wire::EntryKind::directory, "t"), entry(wire::EntryKind::file, "t/keep", 1)};
  o.sync.backup_suffix = "~";
  EXPECT_EQ(find_extraneous(d.fd(), o), (std::vector<std::string>{"t/dir", "t/gone", "t/old"}));
  o.sync.backup_suffix.clear();
  o.sync.backup_dir = "t/old";
  EXPECT_EQ(find_extraneous(d.fd(), o), (std::vector<std::string>{"t/dir", "t/earlier~", "t/gone"}));
  uint64_t moved = 0;
  const BackupOptions beside{"~", ""};
  ASSERT_EQ(move_to_backup(d.fd(), beside, "t/gone", moved), "");
  ASSERT_EQ(move_to_backup(d.fd(), beside, "t/dir", moved), "");
  EXPECT_EQ(moved, 2u);
  EXPECT_FALSE(d.exists("t/gone"));
  EXPECT_EQ(d.read("t/gone~"), "g");
  EXPECT_EQ(d.read("t/dir~/x"), "x");
  // Again over those backups, another kind this time: the older one goes.
  d.file("t/gone/inside", "now a directory");
  d.file("t/dir", "now a file");
  ASSERT_EQ(move_to_backup(d.fd(), beside, "t/gone", moved), "");
  ASSERT_EQ(move_to_backup(d.fd(), beside, "t/dir", moved), "");
  EXPECT_EQ(d.read("t/gone~/inside"), "now a directory");
  EXPECT_EQ(d.read("t/dir~"), "now a file");
}

TEST(Backup, AFinalizeThatFailsHalfWayLeavesEachNameOldOrNewAndEveryBackupOld) {
  Dir d;
  d.file("a", "A-old");
  d.file("c", "C-old");
  wire::Offer o;
  o.chunk_size = 1 << 20;
  o.entries = {entry(wire::EntryKind::file, "a", 5), entry(wire::EntryKind::file, "b", 1),
               entry(wire::EntryKind::file, "c", 5)};
  PrepareOptions opts{"00cc", false, 0};
  opts.backup = {"~", ""};
  auto prepared = ReceiveTree::prepare(d.fd(), o, opts);
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<ReceiveTree>>(prepared))
      << std::get<PrepareError>(prepared).message;
  auto& tree = *std::get<0>(prepared);
  ASSERT_EQ(tree.write(0, bytes("A-newBC-new")), 0);
  // A directory appears where b goes after the offer was checked: its rename fails.
  d.file("b/in-the-way", "a directory stands where b goes: its rename fails");
  int err = 0;
  EXPECT_NE(tree.finalize(err), "");
  // a: replaced, its backup the old version; b: what stood there stands;
  // c: not reached — still the old version, its backup made already (old).
  EXPECT_EQ(d.read("a"), "A-new");
  EXPECT_EQ(d.read("a~"), "A-old");
  EXPECT_EQ(d.read("b/in-the-way"), "a directory stands where b goes: its rename fails");
  EXPECT_FALSE(d.exists("b~"));
  EXPECT_EQ(d.read("c"), "C-old");
  EXPECT_EQ(d.read("c~"), "C-old");
}

}  // namespace
}  // namespace braid::files
