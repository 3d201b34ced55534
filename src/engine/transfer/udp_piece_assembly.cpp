#include "engine/transfer/udp_piece_assembly.hpp"

#include <algorithm>
#include <cstring>

#include "engine/files/piece_hasher.hpp"

namespace braid::transfer {

UdpPieceAssembly::UdpPieceAssembly(wire::HashAlgo algo, uint64_t chunk_offset, uint64_t chunk_length,
                                   std::shared_ptr<PieceBuffers> buffers)
    : algo_(algo), base_(chunk_offset), length_(chunk_length), buffers_(std::move(buffers)) {}

void UdpPieceAssembly::set_header(uint64_t offset, uint64_t length, const wire::Digest& hash) {
  if (header_ || offset < base_ || length > length_ || offset - base_ > length_ - length) return;
  header_ = Header{offset, length, hash};
}

void UdpPieceAssembly::add(uint64_t offset, std::span<const uint8_t> bytes) {
  uint64_t lo = std::max(offset, header_ ? header_->offset : base_);
  uint64_t hi = std::min(offset + bytes.size(), header_ ? header_->offset + header_->length : base_ + length_);
  if (lo >= hi) return;
  if (!buffer_) buffer_ = buffers_ ? buffers_->take(length_) : std::shared_ptr<uint8_t[]>(new uint8_t[length_]);
  std::memcpy(buffer_.get() + (lo - base_), bytes.data() + (lo - offset), hi - lo);
  // Merge [lo, hi) into the arrived ranges.
  auto it = have_.upper_bound(lo);
  if (it != have_.begin() && std::prev(it)->second >= lo) {
    --it;
    lo = it->first;
    hi = std::max(hi, it->second);
    it = have_.erase(it);
  }
  while (it != have_.end() && it->first <= hi) {
    hi = std::max(hi, it->second);
    it = have_.erase(it);
  }
  have_.emplace(lo, hi);
}

uint64_t UdpPieceAssembly::covered(uint64_t lo, uint64_t hi) const {
  uint64_t n = 0;
  for (const auto& [s, e] : have_) n += std::max(lo, std::min(e, hi)) - std::max(lo, std::min(s, hi));
  return n;
}

bool UdpPieceAssembly::complete() const {
  return header_ && covered(header_->offset, header_->offset + header_->length) == header_->length;
}

bool UdpPieceAssembly::hash_ok() {
  if (!complete()) return false;
  if (!ok_) {
    files::PieceHasher h(algo_);
    h.update(bytes());
    ok_ = h.finish() == header_->hash;
  }
  return *ok_;
}

std::span<const uint8_t> UdpPieceAssembly::bytes() const {
  if (!header_ || header_->length == 0) return {};
  return {buffer_.get() + (header_->offset - base_), header_->length};
}

}  // namespace braid::transfer
