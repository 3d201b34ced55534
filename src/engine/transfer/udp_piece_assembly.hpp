// One piece arriving on a UDP lane: its byte ranges come in any order and
// maybe twice (resends crossing late originals), and its header (offset,
// length, hash) comes over a TCP lane, before or after the bytes. The piece
// hash must be taken over its bytes in order, so ranges ahead of the hashed
// prefix are kept (copied) until the gap before them fills; on loopback and
// on clean paths nearly everything arrives in order and nothing is kept.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "engine/files/piece_hasher.hpp"
#include "engine/wire/messages.hpp"

namespace braid::transfer {

class UdpPieceAssembly {
 public:
  explicit UdpPieceAssembly(wire::HashAlgo algo) : hasher_(algo) {}

  /// The piece's header. Once set, later calls with the same range are ignored.
  void set_header(uint64_t offset, uint64_t length, const wire::Digest& hash);
  /// Bytes at transfer offset `offset` (anything outside the piece is ignored).
  void add(uint64_t offset, std::span<const uint8_t> bytes);

  bool has_header() const { return header_.has_value(); }
  /// Every byte of the piece has been hashed.
  bool complete() const { return header_ && next_ == header_->offset + header_->length; }
  /// Valid once complete(): the bytes hash to the header's hash.
  bool hash_ok();
  uint64_t offset() const { return header_ ? header_->offset : 0; }
  uint64_t length() const { return header_ ? header_->length : 0; }
  wire::Digest digest() const { return header_ ? header_->hash : wire::Digest{}; }
  size_t kept_bytes() const { return kept_bytes_; }

 private:
  struct Header {
    uint64_t offset, length;
    wire::Digest hash;
  };
  void hash_in_order(uint64_t offset, std::span<const uint8_t> bytes);
  void drain_kept();

  files::PieceHasher hasher_;
  std::optional<Header> header_;
  uint64_t next_ = 0;                                 // first byte not hashed yet (transfer offset)
  std::map<uint64_t, std::vector<uint8_t>> kept_;     // ranges ahead of next_, or before the header
  size_t kept_bytes_ = 0;
  std::optional<bool> ok_;
};

}  // namespace braid::transfer
