// Per-frame compression: text shrinks and comes back byte for byte, random
// bytes are left alone by the quick test (no zstd call), a frame that would
// save too little is sent raw, and the receiver refuses what it cannot
// trust (no content size, more than the room, trailing bytes, corruption).
#include "engine/compress/frame_codec.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace braid::compress {
namespace {

std::vector<uint8_t> log_lines(size_t size) {
  std::vector<uint8_t> out;
  std::mt19937 rng(7);
  const char* levels[] = {"INFO", "WARN", "DEBUG", "ERROR"};
  while (out.size() < size) {
    const std::string line = "2026-12-03T12:" + std::to_string(10 + rng() % 50) + ":" + std::to_string(10 + rng() % 50) +
                             " " + levels[rng() % 4] + " worker-" + std::to_string(rng() % 16) +
                             " request id=" + std::to_string(rng()) + " took " + std::to_string(rng() % 900) + " ms\n";
    out.insert(out.end(), line.begin(), line.end());
  }
  out.resize(size);
  return out;
}

std::vector<uint8_t> random_bytes(size_t size, uint32_t seed) {
  std::vector<uint8_t> out(size);
  std::mt19937 rng(seed);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

TEST(FrameCodec, TextShrinksAndComesBackExactly) {
  const auto text = log_lines(256 * 1024);
  FrameCompressor c;
  std::vector<uint8_t> wire(text.size());
  const auto n = c.compress(text, wire);
  ASSERT_TRUE(n);
  EXPECT_LT(*n, text.size() / 3) << "log lines compress at least 3:1 at level 1";
  wire.resize(*n);
  const auto size = FrameDecompressor::content_size(wire, text.size());
  ASSERT_TRUE(size);
  EXPECT_EQ(*size, text.size());
  std::vector<uint8_t> back(*size);
  FrameDecompressor d;
  ASSERT_TRUE(d.decompress(wire, back));
  EXPECT_EQ(back, text);
  // Zeros too (a VM image's empty blocks).
  std::vector<uint8_t> zeros(256 * 1024, 0), zw(zeros.size());
  const auto z = c.compress(zeros, zw);
  ASSERT_TRUE(z);
  EXPECT_LT(*z, 1024u);
}

TEST(FrameCodec, RandomBytesAreJudgedByTheSampleAndSentRaw) {
  const auto noise = random_bytes(256 * 1024, 1);
  EXPECT_GT(sample_entropy(noise), kSkipBitsPerByte);
  EXPECT_LT(sample_entropy(log_lines(256 * 1024)), 6.0);
  FrameCompressor c;
  std::vector<uint8_t> wire(noise.size());
  EXPECT_FALSE(c.compress(noise, wire));
  // Half text, half noise, interleaved in 4 KiB blocks: the sample lets it
  // through, zstd saves some — kept only if it saves kMinSavingPercent.
  std::vector<uint8_t> mixed;
  const auto text = log_lines(128 * 1024);
  for (size_t i = 0; i < 32; ++i) {
    mixed.insert(mixed.end(), text.begin() + i * 4096, text.begin() + (i + 1) * 4096);
    mixed.insert(mixed.end(), noise.begin() + i * 4096, noise.begin() + (i + 1) * 4096);
  }
  if (auto n = c.compress(mixed, wire)) {
    EXPECT_LE(*n, mixed.size() * (100 - kMinSavingPercent) / 100);
  }
  // Random bytes with a low-entropy alphabet (hex digits): compressible, and compressed.
  std::vector<uint8_t> hex = random_bytes(256 * 1024, 2);
  for (auto& b : hex) b = "0123456789abcdef"[b & 15];
  const auto h = c.compress(hex, wire);
  ASSERT_TRUE(h);
  EXPECT_LT(*h, hex.size() * 6 / 10);
}

TEST(FrameCodec, TheReceiverRefusesWhatItCannotTrust) {
  const auto text = log_lines(64 * 1024);
  FrameCompressor c;
  std::vector<uint8_t> wire(text.size());
  const auto n = c.compress(text, wire);
  ASSERT_TRUE(n);
  wire.resize(*n);
  EXPECT_FALSE(FrameDecompressor::content_size(wire, text.size() - 1)) << "more than the piece has room for";
  auto padded = wire;
  padded.push_back(0);
  EXPECT_FALSE(FrameDecompressor::content_size(padded, text.size())) << "trailing bytes";
  EXPECT_FALSE(FrameDecompressor::content_size(std::span<const uint8_t>(wire.data(), wire.size() / 2), text.size()));
  const auto junk = random_bytes(1000, 3);
  EXPECT_FALSE(FrameDecompressor::content_size(junk, 1 << 20));
  auto broken = wire;
  broken[broken.size() / 2] ^= 0x55;
  FrameDecompressor d;
  std::vector<uint8_t> out(text.size());
  if (FrameDecompressor::content_size(broken, text.size())) {
    // Caught here or, at worst, by the piece hash: never a silent success with other bytes.
    if (d.decompress(broken, out)) {
      EXPECT_NE(out, text);
    }
  }
  std::vector<uint8_t> small(text.size() - 1);
  EXPECT_FALSE(d.decompress(wire, small));
}

TEST(CompressGovernor, CompressesOnASlowLaneNotOnAFastOneAndProbesMeanwhile) {
  // zstd at 200 MB/s saving 75 %: 5 ns per file byte against 3.75 ns saved
  // per byte on a lane of 200 MB/s (5 ns per wire byte) — it pays — and
  // 0.75 ns on loopback at 1 GB/s — it does not.
  CompressGovernor slow;
  EXPECT_TRUE(slow.try_next()) << "nothing measured: try";
  slow.compressed(1000, 250, 5e-6);
  slow.sent(250, 250 * 20e-9);  // 50 MB/s
  EXPECT_TRUE(slow.pays());
  for (int i = 0; i < 40; ++i) EXPECT_TRUE(slow.try_next());

  CompressGovernor fast;
  fast.compressed(1000, 250, 5e-6);
  fast.sent(250, 250 * 1e-9);  // 1 GB/s
  EXPECT_FALSE(fast.pays());
  // Probes after 16 frames, then 32, 64, 128, 256, 256, ...
  std::vector<unsigned> probes;
  for (unsigned i = 1; i <= 16 + 32 + 64 + 128 + 256 + 256; ++i)
    if (fast.try_next()) probes.push_back(i);
  EXPECT_EQ(probes, (std::vector<unsigned>{16, 48, 112, 240, 496, 752})) << "probes back off to one in kProbeMost";

  // The fast lane slows down (sends now take 40 ns a byte): compression comes back.
  for (int i = 0; i < 20; ++i) fast.sent(1000, 1000 * 40e-9);
  EXPECT_TRUE(fast.pays());
  // Data that stops compressing (saves nothing) turns it off again, whatever the lane.
  for (int i = 0; i < 30; ++i) fast.compressed(1000, 1000, 5e-6);
  EXPECT_FALSE(fast.pays());
}

}  // namespace
}  // namespace braid::compress
