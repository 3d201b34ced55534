// Buffers for whole pieces, kept once freed for the next piece.
//
// A UDP lane holds each piece (1 MiB by default) in memory of its own: the
// sender from its read until the ack (resends come from it), the receiver
// from its first datagram until the verified write. Fresh from the
// allocator, every such buffer's pages fault in on first touch: glibc gives
// freed blocks of this size back to the kernel, so each piece cost ~256 page
// faults. Measured with perf on a 64 MiB transfer over two UDP lanes
// (netlab short64): 13 % of the sender's samples and 9 % of the receiver's
// were those faults, and more on a VM whose host backs a page only when the
// guest first touches it. A kept buffer is touched once.
//
// Bounded: at most `keep_bytes` wait here; what is out is its owners'. A
// buffer let go after its pool is gone is freed.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace braid::transfer {

class PieceBuffers : public std::enable_shared_from_this<PieceBuffers> {
 public:
  /// Enough for the pieces in flight on a few fast lanes (a 1 Gbit/s lane
  /// over 40 ms holds ~5 MiB unacked).
  static constexpr uint64_t kDefaultKeepBytes = 32ull << 20;

  static std::shared_ptr<PieceBuffers> make(uint64_t keep_bytes = kDefaultKeepBytes);
  ~PieceBuffers();
  PieceBuffers(const PieceBuffers&) = delete;
  PieceBuffers& operator=(const PieceBuffers&) = delete;

  /// At least `n` bytes (uninitialised): the smallest kept buffer that is
  /// big enough, else a new one. It comes back here when its last owner
  /// lets go, unless that would keep more than `keep_bytes`.
  std::shared_ptr<uint8_t[]> take(uint64_t n);

  /// Bytes waiting to be taken again.
  uint64_t kept_bytes() const;
  /// Takes served by a kept buffer.
  uint64_t reused() const;

 private:
  explicit PieceBuffers(uint64_t keep_bytes) : keep_limit_(keep_bytes) {}
  void give_back(uint8_t* p, uint64_t capacity);

  const uint64_t keep_limit_;
  mutable std::mutex mu_;
  std::vector<std::pair<uint64_t, uint8_t*>> kept_;  // capacity, memory
  uint64_t kept_bytes_ = 0;
  uint64_t reused_ = 0;
};

}  // namespace braid::transfer
