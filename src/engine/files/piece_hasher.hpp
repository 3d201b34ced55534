// Hashes of pieces and of a whole transfer.
//
// A piece hash covers exactly the piece's bytes: XXH3-128 by default (fast,
// catches corruption), SHA-256 with `--hash sha256` (cryptographic). The
// frames themselves are already authenticated by AES-GCM; the piece hash
// checks the end-to-end path file → file (a wrong read, a wrong offset).
//
// The root hash covers the transfer's final pieces in offset order, each as
// (offset u64 BE, length u64 BE, piece hash): both ends compute it, the
// sender from the hashes it computed while reading, the receiver from the
// hashes it verified; equal roots mean the receiver holds exactly the pieces
// the sender read, tiling the transfer with no gap and no overlap.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/wire/messages.hpp"

namespace braid::files {

class PieceHasher {
 public:
  explicit PieceHasher(wire::HashAlgo algo);
  ~PieceHasher();
  PieceHasher(PieceHasher&&) noexcept;
  PieceHasher& operator=(PieceHasher&&) noexcept;

  void reset();
  void update(std::span<const uint8_t> data);
  wire::Digest finish();
  wire::HashAlgo algo() const { return algo_; }

 private:
  struct State;
  wire::HashAlgo algo_;
  std::unique_ptr<State> state_;
};

struct PieceRecord {
  uint64_t offset = 0;
  uint64_t length = 0;
  wire::Digest hash;
};

/// Root hash over `pieces` (sorted here by offset).
wire::Digest root_hash(wire::HashAlgo algo, std::vector<PieceRecord> pieces);
/// The same over the wire's records (the session machines' RootHashFn).
wire::Digest root_hash_of_ranges(wire::HashAlgo algo, std::vector<wire::HeldRange> ranges);

/// True if the pieces, sorted by offset, tile [0, total) exactly.
bool pieces_tile(std::vector<PieceRecord> pieces, uint64_t total);

}  // namespace braid::files
