// What clean_debris removes from a target directory, and what it never does.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/files/debris.hpp"

namespace braid::files {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;
using std::chrono::seconds;

const std::string kOld = "0123456789abcdef";
const std::string kYoung = "fedcba9876543210";
const std::string kRunning = "00112233445566ff";

class Target {
 public:
  Target() {
    std::string tmpl = fs::temp_directory_path().string() + "/braid-debris-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
    fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~Target() {
    ::close(fd_);
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  // A file `rel` last written `age` ago.
  void file(const std::string& rel, std::chrono::seconds age, const std::string& text = "x") {
    fs::create_directories((path_ / rel).parent_path());
    std::ofstream(path_ / rel) << text;
    const auto t = std::chrono::duration_cast<seconds>(std::chrono::system_clock::now().time_since_epoch()) - age;
    const timespec times[2] = {{t.count(), 0}, {t.count(), 0}};
    ::utimensat(fd_, rel.c_str(), times, AT_SYMLINK_NOFOLLOW);
  }
  bool has(const std::string& rel) const { return fs::exists(fs::symlink_status(path_ / rel)); }
  int fd() const { return fd_; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  int fd_ = -1;
};

TEST(Debris, OldTransfersGoYoungAndRunningOnesStayAndNothingElseIsTouched) {
  Target t;
  const auto week = hours(24 * 7);
  t.file(".braid-resume-" + kOld, week + hours(1));
  t.file(".braid-" + kOld + "-0.part", week + hours(2), "0123456789");
  t.file("deep/dir/.braid-" + kOld + "-3.part", week + hours(2), "abc");
  t.file("deep/.braid-" + kOld + "-4.link", week + hours(3));
  t.file(".braid-probe-1234", week + hours(5));
  // Young: one of its files was written an hour ago — it may still resume.
  t.file(".braid-resume-" + kYoung, week + hours(1));
  t.file(".braid-" + kYoung + "-0.part", hours(1));
  // Running: old files, but its journal is locked by a receiver.
  t.file(".braid-resume-" + kRunning, week + hours(10));
  t.file(".braid-" + kRunning + "-0.part", week + hours(10));
  const int held = ::open((t.path() / (".braid-resume-" + kRunning)).c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
  // Not braid's names, however old.
  const std::vector<std::string> others = {".braid-notes",      ".braid-" + kOld + ".part", ".braid-" + kOld + "-x.part",
                                           ".braid-resume-xyz", "data.part",                "deep/.braid-resume-" + kOld};
  for (const auto& other : others) t.file(other, week * 4);
  // A link to a directory elsewhere is not followed.
  Target elsewhere;
  elsewhere.file(".braid-" + kOld + "-9.part", week * 4);
  fs::create_directory_symlink(elsewhere.path(), t.path() / "link");

  DebrisResult dry = clean_debris(t.fd(), DebrisOptions{week, true});
  EXPECT_EQ(dry.removed.size(), 5u);
  EXPECT_TRUE(t.has(".braid-" + kOld + "-0.part"));  // a dry run removes nothing

  DebrisResult r = clean_debris(t.fd(), DebrisOptions{week, false});
  EXPECT_EQ(r.removed.size(), 5u);
  EXPECT_EQ(r.removed_transfers, 2u);  // kOld and the probe
  EXPECT_EQ(r.removed_bytes, 1u + 10 + 3 + 1 + 1);
  EXPECT_TRUE(r.failed.empty());
  for (const std::string& gone : std::vector<std::string>{".braid-resume-" + kOld, ".braid-" + kOld + "-0.part", "deep/dir/.braid-" + kOld + "-3.part",
                                 "deep/.braid-" + kOld + "-4.link", ".braid-probe-1234"})
    EXPECT_FALSE(t.has(gone)) << gone;
  EXPECT_TRUE(t.has(".braid-resume-" + kYoung));
  EXPECT_TRUE(t.has(".braid-" + kYoung + "-0.part"));
  EXPECT_TRUE(t.has(".braid-resume-" + kRunning));
  EXPECT_TRUE(t.has(".braid-" + kRunning + "-0.part"));
  for (const auto& other : others) EXPECT_TRUE(t.has(other)) << other;
  EXPECT_TRUE(elsewhere.has(".braid-" + kOld + "-9.part"));
  bool young_said = false, running_said = false;
  for (const auto& k : r.kept) {
    young_said = young_said || (k.tag == kYoung && k.why.find("may still resume") != std::string::npos);
    running_said = running_said || (k.tag == kRunning && k.why.find("running") != std::string::npos);
  }
  EXPECT_TRUE(young_said);
  EXPECT_TRUE(running_said);

  // Age 0: every transfer not running goes, the young one too; the running one never.
  DebrisResult all = clean_debris(t.fd(), DebrisOptions{seconds(0), false});
  EXPECT_FALSE(t.has(".braid-" + kYoung + "-0.part"));
  EXPECT_TRUE(t.has(".braid-" + kRunning + "-0.part"));
  ::close(held);
  clean_debris(t.fd(), DebrisOptions{seconds(0), false});
  EXPECT_FALSE(t.has(".braid-" + kRunning + "-0.part"));
  EXPECT_FALSE(t.has(".braid-resume-" + kRunning));
}

TEST(Debris, AStagedDirectoryGoesWholeWithItsTransfer) {
  Target t;
  const auto week = hours(24 * 7);
  const std::string staged = "top/.braid-" + kOld + "-2.dir";
  t.file(".braid-resume-" + kOld, week + hours(1));
  // Completed files there carry their source's old mtime: what counts is
  // when this transfer touched them (ctime), just now.
  t.file(staged + "/a/f1", week * 50, "12345");
  t.file(staged + "/f2", week * 50, "12");
  // A link inside points elsewhere: removed as a link, its target untouched.
  Target elsewhere;
  elsewhere.file("keep", week * 4);
  fs::create_directory_symlink(elsewhere.path(), t.path() / staged / "out");
  // Not a staged directory's name: walked into like any other.
  t.file(".braid-" + kOld + "-x.dir/.braid-" + kOld + "-5.part", week + hours(2), "abc");

  DebrisResult young = clean_debris(t.fd(), DebrisOptions{week, false});
  EXPECT_TRUE(young.removed.empty());
  EXPECT_TRUE(t.has(staged + "/a/f1"));
  DebrisResult r = clean_debris(t.fd(), DebrisOptions{seconds(0), false});
  EXPECT_TRUE(r.failed.empty());
  EXPECT_EQ(r.removed_bytes, 1u + 5 + 2 + 3);
  EXPECT_FALSE(t.has(staged));
  EXPECT_FALSE(t.has(".braid-" + kOld + "-x.dir/.braid-" + kOld + "-5.part"));
  EXPECT_TRUE(t.has(".braid-" + kOld + "-x.dir"));
  EXPECT_TRUE(t.has("top"));
  EXPECT_TRUE(elsewhere.has("keep"));
}

TEST(Debris, Ages) {
  EXPECT_EQ(parse_age("7d"), seconds(7 * 86400));
  EXPECT_EQ(parse_age("12h"), seconds(12 * 3600));
  EXPECT_EQ(parse_age("30min"), seconds(1800));
  EXPECT_EQ(parse_age("30m"), seconds(1800));
  EXPECT_EQ(parse_age("45s"), seconds(45));
  EXPECT_EQ(parse_age("2w"), seconds(14 * 86400));
  EXPECT_EQ(parse_age("0"), seconds(0));
  EXPECT_FALSE(parse_age("7"));
  EXPECT_FALSE(parse_age("d"));
  EXPECT_FALSE(parse_age("-1d"));
  EXPECT_FALSE(parse_age("7 days"));
  EXPECT_EQ(format_age(seconds(7 * 86400)), "7d");
  EXPECT_EQ(format_age(seconds(90)), "90s");
  EXPECT_EQ(format_age(seconds(3600 + 120)), "1h2min");
}

}  // namespace
}  // namespace braid::files
