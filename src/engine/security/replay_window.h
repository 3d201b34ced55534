// Sliding anti-replay window over 64-bit frame counters (the scheme of
// RFC 4303 §3.4.3 / RFC 6479), for lanes whose frames may arrive out of order
// (UDP lanes later). It accepts any counter within the last kSize of the
// highest accepted one, once; it rejects duplicates and counters that fell
// behind the window.
//
// check() is pure; accept() is called only after the frame authenticated, so
// forged frames cannot move the window.
#pragma once

#include <array>
#include <cstdint>

#include "frame_status.h"

namespace braid::security {

class ReplayWindow {
 public:
  static constexpr std::uint64_t kSize = 1024;

  // ok, replayed or too_old.
  FrameStatus check(std::uint64_t counter) const;
  void accept(std::uint64_t counter);

  bool empty() const { return !any_; }
  std::uint64_t highest() const { return highest_; }

 private:
  bool test(std::uint64_t c) const { return (bits_[(c % kSize) / 64] >> (c % 64)) & 1; }
  void set(std::uint64_t c) { bits_[(c % kSize) / 64] |= std::uint64_t{1} << (c % 64); }
  void clear(std::uint64_t c) { bits_[(c % kSize) / 64] &= ~(std::uint64_t{1} << (c % 64)); }

  std::array<std::uint64_t, kSize / 64> bits_{};  // bit (c mod kSize) set: counter c accepted
  std::uint64_t highest_ = 0;
  bool any_ = false;
};

}  // namespace braid::security
