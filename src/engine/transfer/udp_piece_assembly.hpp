// One piece arriving on a UDP lane: its byte ranges come in any order and
// maybe twice (resends crossing late originals), and its header (offset,
// length, hash) comes over a TCP lane, before or after the bytes. The bytes
// are gathered in one buffer the size of the piece's chunk (a piece never
// crosses its chunk), hashed once when every byte is there, and only then
// written — one write per piece instead of one per datagram, and nothing
// unverified ever reaches the disk.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include "core/wire/messages.hpp"
#include "engine/transfer/piece_buffers.hpp"

namespace braid::transfer {

class UdpPieceAssembly {
 public:
  /// `chunk_offset`, `chunk_length`: the transfer range of the chunk that
  /// holds the piece (all that is known before the header comes). The
  /// buffer comes from `buffers` (nullptr: the allocator).
  UdpPieceAssembly(wire::HashAlgo algo, uint64_t chunk_offset, uint64_t chunk_length,
                   std::shared_ptr<PieceBuffers> buffers = nullptr);
  // Moved, never copied: a copy would write into the same shared buffer.
  UdpPieceAssembly(UdpPieceAssembly&&) noexcept = default;
  UdpPieceAssembly& operator=(UdpPieceAssembly&&) noexcept = default;
  UdpPieceAssembly(const UdpPieceAssembly&) = delete;
  UdpPieceAssembly& operator=(const UdpPieceAssembly&) = delete;

  /// The piece's header; ignored unless it lies inside the chunk. Once set,
  /// later calls are ignored.
  void set_header(uint64_t offset, uint64_t length, const wire::Digest& hash);
  /// Bytes at transfer offset `offset` (anything outside the chunk, or
  /// outside the piece once the header is known, is ignored).
  void add(uint64_t offset, std::span<const uint8_t> bytes);

  bool has_header() const { return header_.has_value(); }
  /// Every byte of the piece is here.
  bool complete() const;
  /// Valid once complete(): the bytes hash to the header's hash.
  bool hash_ok();
  uint64_t offset() const { return header_ ? header_->offset : 0; }
  uint64_t length() const { return header_ ? header_->length : 0; }
  wire::Digest digest() const { return header_ ? header_->hash : wire::Digest{}; }
  /// The piece's bytes (valid once complete()).
  std::span<const uint8_t> bytes() const;
  /// Bytes held (the buffer is allocated on the first add).
  uint64_t buffered_bytes() const { return buffer_ ? length_ : 0; }

 private:
  struct Header {
    uint64_t offset, length;
    wire::Digest hash;
  };
  /// Bytes of [lo, hi) that have arrived.
  uint64_t covered(uint64_t lo, uint64_t hi) const;

  wire::HashAlgo algo_;
  uint64_t base_, length_;
  std::shared_ptr<PieceBuffers> buffers_;
  std::shared_ptr<uint8_t[]> buffer_;  // back to buffers_ when the piece is gone
  std::map<uint64_t, uint64_t> have_;  // disjoint, merged [start, end) ranges that arrived
  std::optional<Header> header_;
  std::optional<bool> ok_;
};

}  // namespace braid::transfer
