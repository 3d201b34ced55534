// The browser share's parts apart from HTTP: chunk hashes and the manifest
// (hashed once, cached by size and mtime, a changed file not served), and
// uploads assembled chunk by chunk — a bad chunk refused, the file under
// its name only when every chunk is in and verified. The token and CORS
// are checked over HTTP in integration.serve.share.
#include "engine/serve/share_files.hpp"
#include "engine/serve/share_server.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>

namespace braid::serve {
namespace {
namespace fs = std::filesystem;

struct ShareTest : ::testing::Test {
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("braid-share-test-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string write(const fs::path& p, size_t bytes, unsigned seed) {
    std::mt19937 rng(seed);
    std::string data(bytes, '\0');
    for (auto& c : data) c = static_cast<char>(rng());
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << data;
    return data;
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

std::vector<Sha256> chunk_hashes(const std::string& data) {
  std::vector<Sha256> out;
  for (size_t at = 0; at < data.size(); at += kShareChunkBytes)
    out.push_back(sha256_of(std::string_view(data).substr(at, kShareChunkBytes)));
  return out;
}

TEST(ShareHash, Sha256AndHex) {
  // FIPS 180-2 appendix B.1.
  EXPECT_EQ(hex_of(sha256_of("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const auto h = sha256_from_hex("BA7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  ASSERT_TRUE(h);
  EXPECT_EQ(*h, sha256_of("abc"));
  EXPECT_FALSE(sha256_from_hex("ba78"));
  EXPECT_FALSE(sha256_from_hex(std::string(63, '0') + "g"));
  EXPECT_EQ(chunk_count(0), 0u);
  EXPECT_EQ(chunk_count(1), 1u);
  EXPECT_EQ(chunk_count(kShareChunkBytes), 1u);
  EXPECT_EQ(chunk_count(kShareChunkBytes + 1), 2u);
}

TEST_F(ShareTest, ManifestHasEveryChunksHashAndServesTheChunks) {
  const std::string data = write(dir / "a.bin", 2 * kShareChunkBytes + 777, 1);
  write(dir / "tree/sub/b.bin", 10, 2);
  write(dir / "tree/c.bin", 0, 3);
  ShareManifest m({dir / "a.bin", dir / "tree"});
  ASSERT_EQ(m.refresh(), "");
  const auto files = m.files();
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0].name, "a.bin");
  EXPECT_EQ(files[1].name, "tree/c.bin");
  EXPECT_EQ(files[2].name, "tree/sub/b.bin");
  EXPECT_EQ(files[0].chunks, chunk_hashes(data));
  EXPECT_TRUE(files[1].chunks.empty());
  std::string why;
  for (uint64_t n = 0; n < 3; ++n) {
    const auto c = m.chunk(0, n, why);
    ASSERT_TRUE(c) << why;
    EXPECT_EQ(*c, data.substr(n * kShareChunkBytes, kShareChunkBytes));
  }
  EXPECT_FALSE(m.chunk(0, 3, why));
  EXPECT_FALSE(m.chunk(7, 0, why));
  const auto j = m.json();
  EXPECT_EQ(j["chunk_size"], kShareChunkBytes);
  EXPECT_EQ(j["files"][0]["chunks"][2], hex_of(files[0].chunks[2]));
  EXPECT_EQ(j["files"][0]["size"], data.size());
}

TEST_F(ShareTest, HashesOnceAndAgainOnlyWhatChanged) {
  write(dir / "a.bin", 3 * kShareChunkBytes, 1);
  write(dir / "b.bin", kShareChunkBytes, 2);
  ShareManifest m({dir});
  ASSERT_EQ(m.refresh(), "");
  EXPECT_EQ(m.chunks_hashed(), 4u);
  ASSERT_EQ(m.refresh(), "");
  EXPECT_EQ(m.chunks_hashed(), 4u);  // nothing changed: nothing hashed
  const std::string now = write(dir / "b.bin", kShareChunkBytes + 5, 3);
  std::string why;
  EXPECT_FALSE(m.chunk(1, 0, why));  // not served against the old hashes
  EXPECT_EQ(why, "the file changed since it was shared");
  ASSERT_EQ(m.refresh(), "");
  EXPECT_EQ(m.chunks_hashed(), 6u);  // b.bin only
  EXPECT_EQ(m.files()[1].chunks, chunk_hashes(now));
}

TEST_F(ShareTest, MissingPathIsAnError) {
  ShareManifest m({dir / "nope"});
  EXPECT_NE(m.refresh().find("cannot share"), std::string::npos);
}

TEST(ShareUploadNames, OnlyRelativePathsWithoutDotDot) {
  EXPECT_TRUE(ShareUploads::safe_name("a.bin"));
  EXPECT_TRUE(ShareUploads::safe_name("photos/2024/x.jpg"));
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/./b", "a/", ".", ".."})
    EXPECT_FALSE(ShareUploads::safe_name(bad)) << bad;
}

TEST_F(ShareTest, UploadLandsOnlyWhenEveryChunkIsVerified) {
  const std::string data = write(dir / "src.bin", 3 * kShareChunkBytes + 99, 4);
  const auto hashes = chunk_hashes(data);
  ShareUploads up(dir / "up", {});
  fs::create_directories(dir / "up");
  const auto s = up.start("sub/x.bin", data.size(), hashes, std::nullopt);
  ASSERT_EQ(s.error, "");
  auto piece = [&](uint64_t n) { return std::string_view(data).substr(n * kShareChunkBytes, kShareChunkBytes); };
  std::string why;
  using R = ShareUploads::ChunkResult;
  EXPECT_EQ(up.put(s.id, 3, piece(3), why), R::stored);
  std::string bad(piece(1));
  bad[100] ^= 1;
  EXPECT_EQ(up.put(s.id, 1, bad, why), R::bad_hash);
  EXPECT_EQ(up.put(s.id, 1, piece(0).substr(0, 10), why), R::bad_length);
  EXPECT_EQ(up.put(s.id, 0, piece(0), why), R::stored);
  EXPECT_EQ(up.put(s.id, 0, piece(0), why), R::stored);  // a copy of a chunk already in: harmless
  EXPECT_EQ(up.put(s.id, 2, piece(2), why), R::stored);
  EXPECT_FALSE(fs::exists(dir / "up/sub/x.bin"));  // chunk 1 is still missing: nothing under the name
  EXPECT_EQ(up.pending(), 1u);
  EXPECT_EQ(up.put(s.id, 1, piece(1), why), R::complete);
  EXPECT_EQ(read(dir / "up/sub/x.bin"), data);
  EXPECT_EQ(up.pending(), 0u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "up/sub"), fs::directory_iterator()), 1);  // no .part left
  EXPECT_EQ(up.put(s.id, 1, piece(1), why), R::unknown);
}

TEST_F(ShareTest, UploadRefusals) {
  ShareUploads up(dir, {1000, 500});
  const std::vector<Sha256> one = {sha256_of("x")};
  EXPECT_NE(up.start("../x", 1, one, 10'000).error, "");
  EXPECT_NE(up.start("big", 1001, {sha256_of("a"), }, 10'000).error, "");      // hashes do not match the size
  EXPECT_NE(up.start("big", 2000000, std::vector<Sha256>(2), 1e9).error, "");  // above upload_max
  EXPECT_NE(up.start("x", 1, one, 400).error, "");                             // would eat the disk reserve
  EXPECT_NE(up.start("x", 1, one, std::nullopt).error, "");                    // free space unknown, reserve set
  write(dir / "there", 1, 5);
  EXPECT_NE(up.start("there", 1, one, 10'000).error, "");                      // never over an existing file
  EXPECT_EQ(up.start("x", 1, one, 10'000).error, "");
}

TEST_F(ShareTest, UnfinishedUploadLeavesNothing) {
  {
    ShareUploads up(dir, {});
    ASSERT_EQ(up.start("x", 5, {sha256_of("hello")}, std::nullopt).error, "");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // the .part
  }
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 0);
}

TEST_F(ShareTest, EmptyUploadCompletesAtOnce) {
  ShareUploads up(dir, {});
  ASSERT_EQ(up.start("empty", 0, {}, std::nullopt).error, "");
  EXPECT_TRUE(fs::exists(dir / "empty"));
  EXPECT_EQ(fs::file_size(dir / "empty"), 0u);
}

TEST(ShareQr, TerminalCodeIsSquareHalfBlocks) {
  const std::string qr = qr_terminal("http://192.168.1.5:7880/share/0123456789abcdef/");
  ASSERT_FALSE(qr.empty());
  // Every line as wide as the code is tall in modules: two rows a line.
  std::vector<size_t> widths;
  size_t at = 0, lines = 0;
  while (at < qr.size()) {
    const size_t end = qr.find('\n', at);
    size_t glyphs = 0;
    for (size_t i = at; i < end; ++i) glyphs += (static_cast<unsigned char>(qr[i]) & 0xC0) != 0x80;
    widths.push_back(glyphs);
    at = end + 1;
    ++lines;
  }
  for (size_t w : widths) EXPECT_EQ(w, widths.front());
  EXPECT_EQ(lines, (widths.front() + 1) / 2);
}

}  // namespace
}  // namespace braid::serve
