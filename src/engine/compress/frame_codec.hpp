// Compression of a piece's frames (issue "Scale"): a pure transform, bytes
// in, bytes out, no I/O. The sender calls `compress` once per frame between
// reading it (and hashing it: the piece hash stays over the file's bytes)
// and sealing it; the receiver calls `decompress` between opening a frame
// and verifying the piece. Each frame is decided alone, so incompressible
// data pays only the quick test:
//
//   1. a byte histogram of a strided sample (kSampleBytes bytes): an order-0
//      entropy above kSkipBitsPerByte means random-looking data (encrypted,
//      already compressed) — sent as it is, for well under 1 % of the cost
//      of sealing it;
//   2. otherwise zstd at level 1; kept only if it saves at least
//      kMinSavingPercent of the frame (else the raw bytes go, so a frame is
//      never bigger than without compression).
//
// A compressed frame is one zstd frame that states its content size; the
// receiver refuses one that does not, or that would fill more than the room
// the piece header gives it (no decompression bomb).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

namespace braid::compress {

/// `braid send --compress`: off (--no-compress), auto (where the governor
/// says it pays: the default) or always (every frame the sample lets
/// through, whatever the lane's speed — a metered link, or tests).
enum class Mode : uint8_t { off, automatic, always };

constexpr size_t kSampleBytes = 1024;
constexpr double kSkipBitsPerByte = 7.2;
constexpr unsigned kMinSavingPercent = 5;
constexpr int kLevel = 1;

/// Order-0 entropy of a strided sample of `data`, in bits per byte (0 to 8).
double sample_entropy(std::span<const uint8_t> data);

/// One per sending thread: zstd's context is reused from frame to frame.
class FrameCompressor {
 public:
  FrameCompressor();
  ~FrameCompressor();
  FrameCompressor(const FrameCompressor&) = delete;
  FrameCompressor& operator=(const FrameCompressor&) = delete;
  /// The compressed form of `in` written to `out`, if it pays: its size.
  /// nullopt: send `in` as it is (random-looking, or saving too little).
  /// `out` must hold at least `in.size()` bytes.
  std::optional<size_t> compress(std::span<const uint8_t> in, std::span<uint8_t> out);
  /// The last compress() ran zstd (the sample did not rule it out).
  bool ran_zstd() const { return ran_zstd_; }

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
  bool ran_zstd_ = false;
};

/// Whether compressing pays on one lane: it costs the sender CPU time per
/// file byte, and saves the time the lane spends per wire byte (sealing
/// and the socket, its waits included) on the bytes it saves. On loopback
/// or a fast link the lane is quicker than zstd (~200 MB/s at level 1 on
/// a busy core) and compression would slow the transfer; on a link slower
/// than that it speeds it up. Pure: the lane measures, this decides
/// (averages over recent frames). While compression does not pay, a frame
/// is still tried now and then, so a link that slows down (or data that
/// turns compressible) is noticed: after kProbeEvery frames, then twice as
/// many each time it still does not pay, up to kProbeMost (a probe costs
/// a few frames' time on a fast lane: backing off keeps that near 1 %).
class CompressGovernor {
 public:
  static constexpr unsigned kProbeEvery = 16;
  static constexpr unsigned kProbeMost = 256;
  /// zstd turned `file_bytes` into `packed_bytes` (file_bytes when it did
  /// not pay) in `seconds`.
  void compressed(size_t file_bytes, size_t packed_bytes, double seconds);
  /// The lane took `seconds` to seal and write `wire_bytes`.
  void sent(size_t wire_bytes, double seconds);
  /// Try compressing the next frame?
  bool try_next();
  /// Does compressing pay, by what was measured so far? (true until both
  /// sides are measured)
  bool pays() const;

 private:
  double compress_s_per_byte_ = -1;  // < 0: not measured yet
  double send_s_per_byte_ = -1;
  double saved_fraction_ = 0;
  unsigned skipped_ = 0;
  unsigned probe_every_ = kProbeEvery;
};

/// One per receiving thread.
class FrameDecompressor {
 public:
  FrameDecompressor();
  ~FrameDecompressor();
  FrameDecompressor(const FrameDecompressor&) = delete;
  FrameDecompressor& operator=(const FrameDecompressor&) = delete;
  /// The size `in` says it decompresses to, if it is a single zstd frame
  /// that states it and it is at most `room`; nullopt otherwise.
  static std::optional<size_t> content_size(std::span<const uint8_t> in, size_t room);
  /// Decompresses `in` into exactly `out` (its size from content_size).
  /// false if `in` is malformed or does not fill `out` exactly.
  bool decompress(std::span<const uint8_t> in, std::span<uint8_t> out);

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace braid::compress
