// The sender's side of resume: the receiver's accept lists the ranges it
// holds from an interrupted run, each with its hash. The sender trusts none
// of them blindly — the source may have changed since (an edit that kept
// size and mtime, say): it reads and hashes each range from its own files
// and keeps only those whose hash matches. The kept ranges then become
// delivered pieces in the scheduler (core::Scheduler::mark_resumed) with
// that hash, so the root hash at the end covers them like every sent piece.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/chunk_plan.hpp"
#include "core/wire/messages.hpp"

namespace braid::transfer {

struct HeldCheck {
  std::vector<core::ByteRange> matched;    // ranges whose bytes hash the same here
  std::vector<wire::Digest> matched_hash;  // their hashes, in the same order
  uint64_t matched_bytes = 0;
  uint64_t rejected_bytes = 0;  // changed here, unreadable, or not a range of this transfer
  size_t rejected = 0;
};

/// Reads `n` bytes of the transfer at `offset` into `dst`; false (and
/// `error`) if it cannot.
using RangeReader = std::function<bool(uint64_t offset, uint64_t n, uint8_t* dst, std::string& error)>;

/// Checks every held range against the source: in bounds (`total`), one
/// chunk at most, a hash of the offer's algorithm, and the same bytes here.
HeldCheck check_held_ranges(const std::vector<wire::HeldRange>& held, wire::HashAlgo algo, uint64_t total,
                            uint64_t chunk_size, const RangeReader& read);

}  // namespace braid::transfer
