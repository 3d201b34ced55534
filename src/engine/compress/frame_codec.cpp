#include "engine/compress/frame_codec.hpp"

#include <zstd.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace braid::compress {

double sample_entropy(std::span<const uint8_t> data) {
  if (data.empty()) return 0;
  std::array<uint32_t, 256> counts{};
  const size_t n = std::min(kSampleBytes, data.size());
  // Evenly spread, so a frame that starts with a header and goes on with
  // something else is judged by its bulk.
  const size_t stride = data.size() / n;
  for (size_t i = 0; i < n; ++i) ++counts[data[i * stride]];
  double bits = 0;
  for (const uint32_t c : counts) {
    if (!c) continue;
    const double p = static_cast<double>(c) / static_cast<double>(n);
    bits -= p * std::log2(p);
  }
  return bits;
}

struct FrameCompressor::Ctx {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ~Ctx() { ZSTD_freeCCtx(cctx); }
};

FrameCompressor::FrameCompressor() : ctx_(std::make_unique<Ctx>()) {}
FrameCompressor::~FrameCompressor() = default;

std::optional<size_t> FrameCompressor::compress(std::span<const uint8_t> in, std::span<uint8_t> out) {
  ran_zstd_ = false;
  if (in.size() < 64 || !ctx_->cctx) return std::nullopt;
  // 1024 samples of uniform random bytes show ~7.5 bits; text ~4.5-5.5.
  if (sample_entropy(in) > kSkipBitsPerByte) return std::nullopt;
  ran_zstd_ = true;
  const size_t worth = in.size() - in.size() * kMinSavingPercent / 100;
  const size_t room = std::min(out.size(), worth);
  // ZSTD_compressCCtx writes the content size into the frame header.
  const size_t n = ZSTD_compressCCtx(ctx_->cctx, out.data(), room, in.data(), in.size(), kLevel);
  if (ZSTD_isError(n) || n >= worth) return std::nullopt;  // too little saved (or did not fit `room`)
  return n;
}

namespace {
/// Recent frames weigh most: a link's speed changes.
double average(double was, double now) { return was < 0 ? now : 0.8 * was + 0.2 * now; }
}  // namespace

void CompressGovernor::compressed(size_t file_bytes, size_t packed_bytes, double seconds) {
  if (file_bytes == 0) return;
  const double saved = 1.0 - static_cast<double>(std::min(packed_bytes, file_bytes)) / static_cast<double>(file_bytes);
  saved_fraction_ = compress_s_per_byte_ < 0 ? saved : 0.8 * saved_fraction_ + 0.2 * saved;
  compress_s_per_byte_ = average(compress_s_per_byte_, seconds / static_cast<double>(file_bytes));
}

void CompressGovernor::sent(size_t wire_bytes, double seconds) {
  if (wire_bytes == 0) return;
  send_s_per_byte_ = average(send_s_per_byte_, seconds / static_cast<double>(wire_bytes));
}

bool CompressGovernor::pays() const {
  if (compress_s_per_byte_ < 0 || send_s_per_byte_ < 0) return true;
  // Per file byte: compressing costs compress_s, and saves send_s on the saved share.
  return compress_s_per_byte_ < send_s_per_byte_ * saved_fraction_;
}

bool CompressGovernor::try_next() {
  if (pays()) {
    skipped_ = 0;
    probe_every_ = kProbeEvery;
    return true;
  }
  if (++skipped_ < probe_every_) return false;
  skipped_ = 0;
  probe_every_ = std::min(2 * probe_every_, kProbeMost);
  return true;
}

struct FrameDecompressor::Ctx {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ~Ctx() { ZSTD_freeDCtx(dctx); }
};

FrameDecompressor::FrameDecompressor() : ctx_(std::make_unique<Ctx>()) {}
FrameDecompressor::~FrameDecompressor() = default;

std::optional<size_t> FrameDecompressor::content_size(std::span<const uint8_t> in, size_t room) {
  // Exactly one frame: trailing bytes would be data no one checks.
  if (ZSTD_findFrameCompressedSize(in.data(), in.size()) != in.size()) return std::nullopt;
  const unsigned long long n = ZSTD_getFrameContentSize(in.data(), in.size());
  if (n == ZSTD_CONTENTSIZE_UNKNOWN || n == ZSTD_CONTENTSIZE_ERROR || n > room) return std::nullopt;
  return static_cast<size_t>(n);
}

bool FrameDecompressor::decompress(std::span<const uint8_t> in, std::span<uint8_t> out) {
  if (!ctx_->dctx) return false;
  const size_t n = ZSTD_decompressDCtx(ctx_->dctx, out.data(), out.size(), in.data(), in.size());
  return !ZSTD_isError(n) && n == out.size();
}

}  // namespace braid::compress
