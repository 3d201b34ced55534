// The sender's manifest: what it skips (FIFOs, sockets, devices, unreadable
// entries, link loops), following links, and the check that a file is still
// what the manifest saw after it was read.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <fstream>
#include <thread>

#include "engine/files/source_tree.hpp"

namespace braid::files {
namespace {

namespace fs = std::filesystem;

class Scratch {
 public:
  Scratch() {
    std::string tmpl = fs::temp_directory_path().string() + "/braid-src-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~Scratch() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::all, ec);
    fs::remove_all(path_, ec);
  }
  fs::path operator/(const std::string& p) const { return path_ / p; }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

const SkippedSource* skipped(const ScanResult& r, const std::string& leaf) {
  for (const auto& s : r.skipped)
    if (fs::path(s.path).filename() == leaf) return &s;
  return nullptr;
}

bool listed(const ScanResult& r, const std::string& rel) {
  for (const auto& e : r.tree.entries)
    if (e.path == rel) return true;
  return false;
}

TEST(SourceTree, FifosSocketsAndDevicesAreSkippedWithTheirReason) {
  Scratch s;
  fs::create_directory(s / "t");
  write_file(s / "t/a.txt", "hello");
  ASSERT_EQ(::mkfifo((s / "t/fifo").c_str(), 0644), 0);
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sp = (s / "t/sock").string();
  ASSERT_LT(sp.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sp.c_str(), sp.size() + 1);
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::close(sock);
  const bool device = ::mknod((s / "t/null").c_str(), S_IFCHR | 0644, makedev(1, 3)) == 0;
  if (!device) std::cout << "[ note ] mknod failed (" << std::strerror(errno) << ", needs root): no device in the tree\n";

  ScanResult r = scan_sources({(s / "t").string()});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_TRUE(listed(r, "t/a.txt"));
  EXPECT_FALSE(listed(r, "t/fifo"));
  EXPECT_FALSE(listed(r, "t/sock"));
  ASSERT_TRUE(skipped(r, "fifo"));
  EXPECT_EQ(skipped(r, "fifo")->reason, "a FIFO (named pipe)");
  ASSERT_TRUE(skipped(r, "sock"));
  EXPECT_EQ(skipped(r, "sock")->reason, "a socket");
  if (device) {
    ASSERT_TRUE(skipped(r, "null"));
    EXPECT_EQ(skipped(r, "null")->reason, "a character device");
  }
  EXPECT_EQ(r.tree.file_count, 1u);
  EXPECT_EQ(r.tree.stamps.size(), r.tree.entries.size());

  // --strict-sources: the first one is an error, nothing is sent.
  ScanResult strict = scan_sources({(s / "t").string()}, ScanOptions{false, true});
  EXPECT_FALSE(strict.ok());
  EXPECT_NE(strict.error.find("--strict-sources"), std::string::npos) << strict.error;

  // A PATH that is a FIFO: skipped, and with nothing left, an error.
  ScanResult only = scan_sources({(s / "t/fifo").string()});
  EXPECT_FALSE(only.ok());
  EXPECT_NE(only.error.find("nothing to send"), std::string::npos) << only.error;
}

TEST(SourceTree, AnUnreadableFileOrDirectoryIsSkipped) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file (integration.sources.* drops the capability instead)";
  Scratch s;
  fs::create_directories(s / "t/closed");
  write_file(s / "t/secret", "x");
  write_file(s / "t/closed/inside", "y");
  fs::permissions(s / "t/secret", fs::perms::none);
  fs::permissions(s / "t/closed", fs::perms::none);
  ScanResult r = scan_sources({(s / "t").string()});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_TRUE(skipped(r, "secret"));
  EXPECT_NE(skipped(r, "secret")->reason.find("cannot open"), std::string::npos);
  ASSERT_TRUE(skipped(r, "closed"));
  EXPECT_FALSE(listed(r, "t/closed"));
  fs::permissions(s / "t/closed", fs::perms::owner_all);
}

TEST(SourceTree, LinksAreSentAsLinksOrFollowedAndLoopsAreRefused) {
  Scratch s;
  fs::create_directories(s / "t/dir");
  fs::create_directories(s / "outside");
  write_file(s / "t/dir/f", "in dir");
  write_file(s / "outside/o", "outside");
  fs::create_symlink("dir/f", s / "t/to-file");
  fs::create_symlink("../outside", s / "t/to-dir");
  fs::create_symlink("..", s / "t/dir/up");  // a loop when followed
  fs::create_symlink("missing", s / "t/broken");

  ScanResult plain = scan_sources({(s / "t").string()});
  ASSERT_TRUE(plain.ok()) << plain.error;
  EXPECT_TRUE(plain.skipped.empty());
  for (const auto& e : plain.tree.entries) {
    if (e.path == "t/to-file" || e.path == "t/to-dir" || e.path == "t/dir/up" || e.path == "t/broken") {
      EXPECT_EQ(e.kind, wire::EntryKind::symlink) << e.path;
    }
  }

  ScanResult followed = scan_sources({(s / "t").string()}, ScanOptions{true, false});
  ASSERT_TRUE(followed.ok()) << followed.error;
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < followed.tree.entries.size(); ++i) at[followed.tree.entries[i].path] = i;
  ASSERT_TRUE(at.count("t/to-file"));
  EXPECT_EQ(followed.tree.entries[at["t/to-file"]].kind, wire::EntryKind::file);
  EXPECT_EQ(followed.tree.entries[at["t/to-file"]].size, 6u);
  // The file itself, so the sender's open (O_NOFOLLOW) opens it.
  EXPECT_EQ(fs::path(followed.tree.local_path(at["t/to-file"])), fs::canonical(s / "t/dir/f"));
  EXPECT_GE(::open(followed.tree.local_path(at["t/to-file"]).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC), 0);
  ASSERT_TRUE(at.count("t/to-dir"));
  EXPECT_EQ(followed.tree.entries[at["t/to-dir"]].kind, wire::EntryKind::directory);
  ASSERT_TRUE(at.count("t/to-dir/o"));
  EXPECT_EQ(followed.tree.entries[at["t/to-dir/o"]].kind, wire::EntryKind::file);
  EXPECT_FALSE(at.count("t/dir/up"));
  ASSERT_TRUE(skipped(followed, "up"));
  EXPECT_NE(skipped(followed, "up")->reason.find("symlink loop"), std::string::npos);
  ASSERT_TRUE(skipped(followed, "broken"));
  EXPECT_NE(skipped(followed, "broken")->reason.find("broken symlink"), std::string::npos);

  ScanResult strict = scan_sources({(s / "t").string()}, ScanOptions{true, true});
  EXPECT_FALSE(strict.ok());
}

// ---- a file that changes while it is read -------------------------------------

struct OneFile {
  Scratch s;
  fs::path file = s / "f.bin";
  ScanResult scan;
  explicit OneFile(const std::string& text = std::string(1000, 'a')) {
    write_file(file, text);
    scan = scan_sources({file.string()});
  }
};

TEST(CheckUnchanged, NothingChangedSaysNothing) {
  OneFile f;
  ASSERT_TRUE(f.scan.ok());
  EXPECT_FALSE(check_unchanged(f.scan.tree, 0));
  const int fd = ::open(f.file.c_str(), O_RDONLY | O_CLOEXEC);
  char buf[1000];
  ASSERT_EQ(::read(fd, buf, sizeof buf), 1000);
  EXPECT_FALSE(check_unchanged(f.scan.tree, 0, fd));  // reading changes none of it
  ::close(fd);
}

TEST(CheckUnchanged, AFileThatGrewOrShrankIsCaught) {
  {
    OneFile f;
    std::ofstream(f.file, std::ios::app) << "more";
    auto why = check_unchanged(f.scan.tree, 0);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("grew from 1000 to 1004 bytes"), std::string::npos) << *why;
  }
  {
    OneFile f;
    const int fd = ::open(f.file.c_str(), O_RDONLY | O_CLOEXEC);
    fs::resize_file(f.file, 10);
    auto why = check_unchanged(f.scan.tree, 0, fd);
    ::close(fd);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("shrank from 1000 to 10 bytes"), std::string::npos) << *why;
  }
}

TEST(CheckUnchanged, AWriteThatKeepsTheSizeIsCaughtByItsTimes) {
  OneFile f;
  // Times are compared to the nanosecond; the write comes after the manifest's stat.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::fstream io(f.file, std::ios::in | std::ios::out | std::ios::binary);
    io.seekp(500);
    io << "b";
  }
  auto why = check_unchanged(f.scan.tree, 0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("modification time"), std::string::npos) << *why;
}

TEST(CheckUnchanged, AnMtimeSetBackIsStillCaughtByTheChangeTime) {
  OneFile f;
  const FileStamp was = f.scan.tree.stamps[0];
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::fstream io(f.file, std::ios::in | std::ios::out | std::ios::binary);
    io << "z";
  }
  const timespec mtime{static_cast<time_t>(was.mtime_ns / 1'000'000'000), static_cast<long>(was.mtime_ns % 1'000'000'000)};
  const timespec times[2] = {mtime, mtime};  // as a tool that "keeps" the mtime does
  ASSERT_EQ(::utimensat(AT_FDCWD, f.file.c_str(), times, 0), 0);
  auto why = check_unchanged(f.scan.tree, 0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("change time"), std::string::npos) << *why;
}

TEST(CheckUnchanged, AFileReplacedUnderItsNameIsCaughtByPath) {
  OneFile f;
  const int fd = ::open(f.file.c_str(), O_RDONLY | O_CLOEXEC);
  write_file(f.s / "new", std::string(1000, 'a'));
  fs::rename(f.s / "new", f.file);
  ::close(fd);  // (its fd still reads the old file, whose change time moved when it lost its name)
  auto why = check_unchanged(f.scan.tree, 0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("another file"), std::string::npos) << *why;
  fs::remove(f.file);
  why = check_unchanged(f.scan.tree, 0);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("can no longer be found"), std::string::npos) << *why;
}

}  // namespace
}  // namespace braid::files

namespace braid::files {
namespace {

// Local paths are kept as prefixes: two PATHs of 50 files each, in two
// directories, keep one prefix each; a followed link to a file keeps its real
// path; and every entry's local path is what the walk found.
TEST(SourceTree, LocalPathsKeepOnePrefixAPathAndOnlyTheEntriesFoundElsewhere) {
  Scratch s;
  for (const char* top : {"one/a", "two/b"}) {
    fs::create_directories(s / top / "sub");
    for (int i = 0; i < 50; ++i) write_file(s / top / "sub" / ("f" + std::to_string(i)), "x");
  }
  fs::create_directories(s / "elsewhere");
  write_file(s / "elsewhere/target", "target");
  fs::create_symlink("../../elsewhere/target", s / "two/b/link");
  ScanResult r = scan_sources({(s / "one/a").string(), (s / "two/b").string()}, ScanOptions{true, false});
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.tree.local_paths.size(), r.tree.entries.size());
  EXPECT_EQ(r.tree.local_paths.kept(), 2u + 1u);  // a's prefix, b's, and the link's target
  for (size_t i = 0; i < r.tree.entries.size(); ++i) {
    const std::string& rel = r.tree.entries[i].path;
    const std::string expected = rel == "b/link"           ? fs::canonical(s / "elsewhere/target").string()
                                 : rel.starts_with("a")    ? (s / "one" / rel).string()
                                                           : (s / "two" / rel).string();
    EXPECT_EQ(r.tree.local_path(i), expected) << rel;
  }
  // Issue 18: a streamed walk lets go of its front; the entries held keep
  // their index, their local path and their stamp.
  SourceTree copy = r.tree;
  const size_t all = copy.size();
  std::vector<std::string> paths;
  for (size_t i = 0; i < all; ++i) paths.push_back(copy.local_path(i));
  copy.release_before(all / 4);  // fewer go than stay: nothing yet
  EXPECT_EQ(copy.first, 0u);
  copy.release_before(all - 2);
  EXPECT_EQ(copy.first, all - 2);
  EXPECT_EQ(copy.size(), all);
  EXPECT_EQ(copy.entries.size(), 2u);
  EXPECT_EQ(copy.stamps.size(), 2u);
  for (size_t i = all - 2; i < all; ++i) {
    EXPECT_EQ(copy.local_path(i), paths[i]);
    EXPECT_EQ(copy.entry(i).path, r.tree.entries[i].path);
    EXPECT_EQ(copy.stamp(i).ino, r.tree.stamps[i].ino);
  }
  EXPECT_LE(copy.local_paths.kept(), 2u);  // the prefix (or path) of each entry held
  EXPECT_TRUE(check_unchanged(copy, 0).has_value());  // let go: an error, not a read of freed memory
  // Built by hand, prefixes that come back after another are kept again.
  LocalPaths p;
  p.push("/x/a", "a");
  p.push("/y/b", "b");
  p.push("/x/c", "c");
  p.push("/real/file", "d");
  p.push("/x/e", "e");
  EXPECT_EQ(p.of(0, "a"), "/x/a");
  EXPECT_EQ(p.of(1, "b"), "/y/b");
  EXPECT_EQ(p.of(2, "c"), "/x/c");
  EXPECT_EQ(p.of(3, "d"), "/real/file");
  EXPECT_EQ(p.of(4, "e"), "/x/e");
}

TEST(SourceTree, WithSparseAFileListsItsDataRangesAndHolesAreLeftOut) {
  Scratch s;
  // 64 MiB with data at 0 and at 32 MiB (64 KiB each), made with pwrite into
  // a truncated file: the file system keeps the rest as holes, if it can.
  const int fd = ::open((s / "sparse").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 64 << 20), 0);
  const std::string block(64 << 10, 'x');
  ASSERT_EQ(::pwrite(fd, block.data(), block.size(), 0), static_cast<ssize_t>(block.size()));
  ASSERT_EQ(::pwrite(fd, block.data(), block.size(), 32 << 20), static_cast<ssize_t>(block.size()));
  ::close(fd);
  write_file(s / "dense", "all data");
  struct stat st {};
  ASSERT_EQ(::stat((s / "sparse").c_str(), &st), 0);
  if (static_cast<uint64_t>(st.st_blocks) * 512 >= (64u << 20)) GTEST_SKIP() << "this file system keeps no holes";

  ScanOptions opts;
  opts.sparse = true;
  const ScanResult r = scan_sources({(s / "sparse").string(), (s / "dense").string()}, opts);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.tree.entries.size(), 2u);
  // The operands go by name (path order): dense, then sparse.
  ASSERT_EQ(r.tree.entries[0].path, "dense");
  const auto& sparse = r.tree.entries[1];
  ASSERT_TRUE(sparse.data);
  // The file system may round a data range out to its own blocks: each
  // written block is inside one range, and the ranges hold far less than the file.
  ASSERT_EQ(sparse.data->size(), 2u);
  EXPECT_LE((*sparse.data)[0].offset, 0u);
  EXPECT_GE((*sparse.data)[0].offset + (*sparse.data)[0].length, 64u << 10);
  EXPECT_LE((*sparse.data)[1].offset, 32u << 20);
  EXPECT_GE((*sparse.data)[1].offset + (*sparse.data)[1].length, (32u << 20) + (64u << 10));
  EXPECT_LT(sparse.data_bytes(), 8u << 20);
  EXPECT_FALSE(r.tree.entries[0].data);  // no holes: plain data

  // Without -S the same file is all data.
  const ScanResult plain = scan_sources({(s / "sparse").string()});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain.tree.entries[0].data);
}

TEST(SourceTree, GroupHardLinksMakesLaterNamesLinksToTheFirst) {
  // Pure: only the stamps count. a and c share an inode (3 links, one
  // outside the tree), b is alone, d shares b's inode but says 1 link (not
  // grouped: the file system says it has no other name), e is another device.
  SourceTree t;
  auto add = [&](const std::string& path, uint64_t size, dev_t dev, ino_t ino, nlink_t nlink) {
    wire::ManifestEntry e;
    e.path = path;
    e.size = size;
    t.entries.push_back(e);
    t.local_paths.push("/src/" + path, path);
    FileStamp st;
    st.size = size;
    st.dev = dev;
    st.ino = ino;
    st.nlink = nlink;
    t.stamps.push_back(st);
    t.total_bytes += size;
    ++t.file_count;
  };
  add("a", 100, 1, 10, 3);
  add("b", 7, 1, 11, 2);
  add("c", 100, 1, 10, 3);
  add("d", 7, 1, 11, 1);
  add("e", 100, 2, 10, 3);
  t.entries[0].data = std::vector<wire::DataRange>{{0, 10}};
  t.entries[2].data = std::vector<wire::DataRange>{{0, 10}};
  group_hard_links(t);
  EXPECT_FALSE(t.entries[0].hard_link_to);
  EXPECT_TRUE(t.entries[0].data);  // the first keeps its bytes and holes
  EXPECT_FALSE(t.entries[1].hard_link_to);
  ASSERT_TRUE(t.entries[2].hard_link_to);
  EXPECT_EQ(*t.entries[2].hard_link_to, 0u);
  EXPECT_EQ(t.entries[2].size, 0u);
  EXPECT_FALSE(t.entries[2].data);
  EXPECT_FALSE(t.entries[3].hard_link_to);
  EXPECT_FALSE(t.entries[4].hard_link_to);
  EXPECT_EQ(t.total_bytes, 100u + 7 + 7 + 100);
  EXPECT_EQ(t.file_count, 5u);
}

TEST(SourceTree, WithHardLinksTheSecondNameOfAFileIsALink) {
  Scratch s;
  fs::create_directories(s / "t/sub");
  write_file(s / "t/a", "shared bytes");
  ASSERT_EQ(::link((s / "t/a").c_str(), (s / "t/sub/b").c_str()), 0);
  write_file(s / "t/c", "alone");
  ScanOptions opts;
  opts.hard_links = true;
  const ScanResult r = scan_sources({(s / "t").string()}, opts);
  ASSERT_TRUE(r.ok()) << r.error;
  std::map<std::string, const wire::ManifestEntry*> by_path;
  for (const auto& e : r.tree.entries) by_path[e.path] = &e;
  ASSERT_TRUE(by_path.count("t/a") && by_path.count("t/sub/b") && by_path.count("t/c"));
  EXPECT_FALSE(by_path["t/a"]->hard_link_to);  // walked first (sorted names)
  ASSERT_TRUE(by_path["t/sub/b"]->hard_link_to);
  EXPECT_EQ(r.tree.entries[*by_path["t/sub/b"]->hard_link_to].path, "t/a");
  EXPECT_EQ(r.tree.total_bytes, 12u + 5);
  const ScanResult plain = scan_sources({(s / "t").string()});  // without -H: two copies
  EXPECT_EQ(plain.tree.total_bytes, 12u + 12 + 5);
}

TEST(StreamedWalk, TheBatchesPutTogetherAreTheWholeWalkHardLinksIncluded) {
  Scratch s;
  for (int d = 0; d < 5; ++d) {
    fs::create_directories(s / ("t/d" + std::to_string(d)));
    for (int f = 0; f < 40; ++f)
      write_file(s / ("t/d" + std::to_string(d) + "/f" + std::to_string(f)), std::string(static_cast<size_t>(f), 'x'));
  }
  // Two more names of an early file, far apart in the walk: the links cross batches.
  fs::create_hard_link(s / "t/d0/f7", s / "t/d4/link-a");
  fs::create_hard_link(s / "t/d0/f7", s / "t/d2/link-b");
  write_file(s / "u", "a second PATH");
  ScanOptions opts;
  opts.hard_links = true;
  const std::vector<std::string> paths{(s / "t").string(), (s / "u").string()};
  const ScanResult whole = scan_sources(paths, opts);
  ASSERT_TRUE(whole.ok()) << whole.error;
  SourceTree put_together;
  std::vector<size_t> sizes;
  int lasts = 0;
  const ScanResult streamed = scan_sources_streamed(paths, opts, 16, [&](SourceTree&& b, bool last) {
    sizes.push_back(b.entries.size());
    lasts += last;
    append_batch(put_together, std::move(b));
    return true;
  });
  ASSERT_TRUE(streamed.ok()) << streamed.error;
  EXPECT_EQ(lasts, 1);
  EXPECT_GT(sizes.size(), 10u);
  for (size_t i = 0; i + 1 < sizes.size(); ++i) EXPECT_EQ(sizes[i], 16u);
  EXPECT_EQ(put_together.entries, whole.tree.entries);
  ASSERT_EQ(put_together.local_paths.size(), whole.tree.local_paths.size());
  for (size_t i = 0; i < whole.tree.entries.size(); ++i)
    EXPECT_EQ(put_together.local_path(i), whole.tree.local_path(i)) << i;
  EXPECT_EQ(put_together.local_paths.kept(), whole.tree.local_paths.kept());
  EXPECT_EQ(put_together.total_bytes, whole.tree.total_bytes);
  EXPECT_EQ(put_together.file_count, whole.tree.file_count);
  size_t links = 0;
  for (const auto& e : put_together.entries) links += e.hard_link_to.has_value();
  EXPECT_EQ(links, 2u);
}

TEST(StreamedWalk, AStopEndsTheWalkAndAMissingPathIsAnErrorBeforeAnyBatch) {
  Scratch s;
  fs::create_directories(s / "t");
  for (int f = 0; f < 100; ++f) write_file(s / ("t/f" + std::to_string(f)), "x");
  int batches = 0;
  const ScanResult stopped = scan_sources_streamed({(s / "t").string()}, {}, 10, [&](SourceTree&&, bool) {
    return ++batches < 3;
  });
  EXPECT_FALSE(stopped.ok());
  EXPECT_EQ(batches, 3);
  batches = 0;
  const ScanResult missing =
      scan_sources_streamed({(s / "t").string(), (s / "nope").string()}, {}, 10, [&](SourceTree&&, bool) {
        ++batches;
        return true;
      });
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(batches, 0);
  EXPECT_EQ(check_operands({(s / "nope").string()}), missing.error);
}

}  // namespace
}  // namespace braid::files
