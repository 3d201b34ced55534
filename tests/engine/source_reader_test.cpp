// SourceReader's life (engine/transfer/source_reader.hpp): once retire()
// returns, the caller's tree may be freed — no read is in it, none starts.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/transfer/source_reader.hpp"
#include "scratch_target.hpp"

namespace braid::transfer {
namespace {

// Holds every read inside the reader until let go.
class Gate : public ReadFaults {
 public:
  void before_read(uint64_t, uint64_t) override {
    std::unique_lock lock(mu_);
    ++inside_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
  }
  bool wait_inside(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return inside_ >= n; });
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0;
  bool open_ = false;
};

files::SourceTree tree_of(const files::testing::ScratchTarget& dir, const std::string& text) {
  dir.put("src/a.txt", text);
  auto s = files::scan_sources({dir.at("src/a.txt").string()}, files::ScanOptions{});
  EXPECT_TRUE(s.ok()) << s.error;
  return std::move(s.tree);
}

TEST(SourceReader, RetireWaitsForTheReadsInFlightAndRefusesTheNext) {
  files::testing::ScratchTarget dir("source-reader");
  auto tree = std::make_unique<files::SourceTree>(tree_of(dir, "0123456789"));
  auto gate = std::make_shared<Gate>();
  auto reader = std::make_shared<SourceReader>(1, *tree, wire::HashAlgo::xxh3_128, compress::Mode::off, gate);
  std::vector<uint8_t> got(4);
  std::string error;
  auto read = std::async(std::launch::async, [&] { return reader->read(3, 4, got.data(), error); });
  ASSERT_TRUE(gate->wait_inside(1));
  auto retired = std::async(std::launch::async, [&] { reader->retire(); });
  // A lane's read is in the tree: retire() must not return under it.
  EXPECT_EQ(retired.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  gate->open();
  EXPECT_TRUE(read.get()) << error;
  EXPECT_EQ(std::string(got.begin(), got.end()), "3456");
  retired.get();
  EXPECT_TRUE(reader->retired());
  tree.reset();  // the caller's to free now; the reader (a lane's) lives on
  // A stale piece read after the end: a clear error, the tree untouched.
  std::string late;
  EXPECT_FALSE(reader->read(0, 4, got.data(), late));
  EXPECT_EQ(late, SourceReader::kRetired);
  reader->retire();  // idempotent
}

TEST(SourceReader, RetireWithNoReadInFlightReturnsAtOnce) {
  files::testing::ScratchTarget dir("source-reader");
  const files::SourceTree tree = tree_of(dir, "abcdef");
  SourceReader reader(1, tree, wire::HashAlgo::xxh3_128);
  std::vector<uint8_t> got(6);
  std::string error;
  ASSERT_TRUE(reader.read(0, 6, got.data(), error)) << error;
  reader.retire();
  EXPECT_FALSE(reader.read(0, 6, got.data(), error));
  EXPECT_EQ(error, SourceReader::kRetired);
}

// Issue 18: a streamed walk lets go of the entries whose bytes are all
// acked. A read of them after that (a stale copy of an acked piece, on a
// lane that was slow to notice the cancel) fails and says the bytes were
// let go, so the lane drops it instead of ending the transfer; the bytes
// still held read as before.
TEST(SourceReader, BytesLetGoFailToReadAndSaySoTheRestStillRead) {
  files::testing::ScratchTarget dir("source-reader");
  for (int i = 0; i < 6; ++i) dir.put("src/f" + std::to_string(i), std::string(100, static_cast<char>('a' + i)));
  auto s = files::scan_sources({dir.at("src").string()}, files::ScanOptions{});
  ASSERT_TRUE(s.ok()) << s.error;
  files::SourceTree tree = std::move(s.tree);
  ASSERT_EQ(tree.size(), 7u);  // src, then f0 … f5 (100 bytes each, laid end to end)
  auto gate = std::make_shared<Gate>();
  SourceReader reader(1, tree, wire::HashAlgo::xxh3_128, compress::Mode::off, gate);
  EXPECT_FALSE(reader.released(0));
  std::vector<uint8_t> got(200);
  std::string error, stale_error;
  // A read of f1 begins (no file touched yet) and the entries before f4
  // go meanwhile (5 of 7: more than stay, so they are erased).
  auto stale = std::async(std::launch::async, [&] { return reader.read(100, 100, got.data(), stale_error); });
  ASSERT_TRUE(gate->wait_inside(1));
  reader.release_before(tree, 5);
  EXPECT_EQ(tree.first, 5u);
  EXPECT_EQ(tree.entries.size(), 2u);
  gate->open();
  EXPECT_FALSE(stale.get());
  EXPECT_TRUE(reader.released(100)) << stale_error;
  // After the release: f0 … f3 are let go; f4 and f5 read as before.
  EXPECT_TRUE(reader.released(399));
  EXPECT_FALSE(reader.released(400));
  EXPECT_FALSE(reader.read(350, 100, got.data(), error));  // spans f3 (gone) and f4
  EXPECT_TRUE(reader.released(350));
  ASSERT_TRUE(reader.read(400, 200, got.data(), error)) << error;
  EXPECT_EQ(std::string(got.begin(), got.end()), std::string(100, 'e') + std::string(100, 'f'));
}

size_t layout_first_file(const files::SourceTree& tree) {
  for (size_t i = 0; i < tree.entries.size(); ++i)
    if (tree.entries[i].kind == wire::EntryKind::file) return i;
  return 0;
}

// A piece of small files reads each whole file without the fd cache (open,
// read, check, close): the bytes are the files', a file changed since the
// walk is still refused, and a file read in halves goes through the cache.
TEST(SourceReader, WholeFilesInOnePieceAreReadAndCheckedLikeTheRest) {
  files::testing::ScratchTarget dir("source-reader");
  std::string expected;
  // Files at the top and in two directories.
  for (int i = 0; i < 5; ++i) dir.put("src/f" + std::to_string(i), std::string(100 + i, static_cast<char>('a' + i)));
  for (int i = 0; i < 3; ++i) {
    dir.put("src/d1/g" + std::to_string(i), std::string(50 + i, static_cast<char>('k' + i)));
    dir.put("src/d2/h" + std::to_string(i), std::string(70 + i, static_cast<char>('p' + i)));
  }
  auto s = files::scan_sources({dir.at("src").string()}, files::ScanOptions{});
  ASSERT_TRUE(s.ok()) << s.error;
  for (size_t i = 0; i < s.tree.entries.size(); ++i)
    if (s.tree.entries[i].kind == wire::EntryKind::file) {
      std::ifstream in(s.tree.local_path(i), std::ios::binary);
      expected += std::string(std::istreambuf_iterator<char>(in), {});
    }
  ASSERT_EQ(expected.size(), s.tree.total_bytes);
  SourceReader reader(1, s.tree, wire::HashAlgo::xxh3_128);
  std::vector<uint8_t> got(expected.size());
  std::string error;
  ASSERT_TRUE(reader.read(0, got.size(), got.data(), error)) << error;
  EXPECT_EQ(std::string(got.begin(), got.end()), expected);
  // The first file in two reads: a part, then the rest (its end is checked).
  const size_t first = s.tree.entries[layout_first_file(s.tree)].size;
  ASSERT_TRUE(reader.read(0, 10, got.data(), error)) << error;
  ASSERT_TRUE(reader.read(10, first - 10, got.data() + 10, error)) << error;
  EXPECT_EQ(std::string(got.begin(), got.begin() + static_cast<long>(first)), expected.substr(0, first));
  // A file rewritten since the walk (one byte more): read whole, refused;
  // one gone since: refused with its name.
  dir.put("src/f4", std::string(105, 'e'));
  EXPECT_FALSE(reader.read(0, expected.size(), got.data(), error));
  EXPECT_NE(error.find("f4"), std::string::npos) << error;
  uint64_t at = 0, h1 = 0, h1_size = 0;
  for (const auto& e : s.tree.entries) {
    if (e.kind != wire::EntryKind::file) continue;
    if (e.path.ends_with("d2/h1")) h1 = at, h1_size = e.size;
    at += e.size;
  }
  ASSERT_GT(h1_size, 0u);
  std::filesystem::remove(dir.at("src/d2/h1"));
  error.clear();
  EXPECT_FALSE(reader.read(h1, h1_size, got.data(), error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
  EXPECT_NE(error.find("d2/h1"), std::string::npos) << error;
  reader.retire();
}

}  // namespace
}  // namespace braid::transfer
