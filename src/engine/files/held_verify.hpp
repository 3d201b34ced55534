// Resume, the receiver's side: the ranges a journal claims are read back from
// the temporary files and hashed before any of them counts. The journal's
// records say what was verified once; only the bytes on disk now say what is
// there — a `.part` file edited, cut, extended, replaced or rotten since the
// earlier run shows up here, and its ranges are fetched again.
//
// Ranges are checked on a few threads at once (each streams its ranges in
// 4 MiB reads), so the check runs at the disk's (or the page cache's) speed,
// not one hash core's.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "engine/files/held_ranges.hpp"
#include "engine/files/piece_hasher.hpp"
#include "engine/files/receive_tree.hpp"

namespace braid::files {

struct HeldVerifyOptions {
  unsigned threads = 0;                       // 0: the machine's cores, at most 4
  const std::atomic<bool>* cancel = nullptr;  // set: stop as soon as possible (cancelled = true)
};

struct HeldVerifyResult {
  HeldRanges verified;              // read back and matched their hash
  std::vector<PieceRecord> failed;  // claimed, but the bytes on disk differ or cannot be read (by offset)
  uint64_t verified_bytes = 0;
  uint64_t failed_bytes = 0;
  double seconds = 0;
  bool cancelled = false;  // stopped early: `verified` is incomplete, trust nothing more
};

/// Reads every range of `claimed` from `tree` and hashes it with `algo`.
HeldVerifyResult verify_held(ReceiveTree& tree, const HeldRanges& claimed, wire::HashAlgo algo,
                             const HeldVerifyOptions& opts = {});

}  // namespace braid::files
