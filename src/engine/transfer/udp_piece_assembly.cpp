#include "engine/transfer/udp_piece_assembly.hpp"

#include <algorithm>

namespace braid::transfer {

void UdpPieceAssembly::set_header(uint64_t offset, uint64_t length, const wire::Digest& hash) {
  if (header_) return;
  header_ = Header{offset, length, hash};
  next_ = offset;
  drain_kept();
}

void UdpPieceAssembly::add(uint64_t offset, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  if (header_) {
    const uint64_t end = header_->offset + header_->length;
    if (offset >= end || offset + bytes.size() <= next_) return;  // outside, or hashed already
    if (offset + bytes.size() > end) bytes = bytes.first(end - offset);
    if (offset <= next_) {
      hash_in_order(offset, bytes);
      drain_kept();
      return;
    }
  }
  // Ahead of the hashed prefix (or no header yet): keep a copy, the longest one per start.
  auto& slot = kept_[offset];
  if (slot.size() < bytes.size()) {
    kept_bytes_ += bytes.size() - slot.size();
    slot.assign(bytes.begin(), bytes.end());
  }
}

void UdpPieceAssembly::hash_in_order(uint64_t offset, std::span<const uint8_t> bytes) {
  // offset <= next_ < offset + size: hash the part from next_ on.
  auto fresh = bytes.subspan(next_ - offset);
  hasher_.update(fresh);
  next_ += fresh.size();
}

void UdpPieceAssembly::drain_kept() {
  if (!header_) return;
  const uint64_t end = header_->offset + header_->length;
  while (!kept_.empty() && kept_.begin()->first <= next_) {
    auto node = kept_.extract(kept_.begin());
    kept_bytes_ -= node.mapped().size();
    std::span<const uint8_t> b(node.mapped());
    const uint64_t at = node.key();
    if (at >= end) continue;
    if (at + b.size() > end) b = b.first(end - at);
    if (at + b.size() > next_) hash_in_order(at, b);
  }
}

bool UdpPieceAssembly::hash_ok() {
  if (!complete()) return false;
  if (!ok_) ok_ = hasher_.finish() == header_->hash;
  return *ok_;
}

}  // namespace braid::transfer
