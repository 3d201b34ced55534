#include "engine/transfer/resume_check.hpp"

#include "engine/files/piece_hasher.hpp"

namespace braid::transfer {

HeldCheck check_held_ranges(const std::vector<wire::HeldRange>& held, wire::HashAlgo algo, uint64_t total,
                            uint64_t chunk_size, const RangeReader& read) {
  HeldCheck out;
  const uint8_t digest_size = algo == wire::HashAlgo::sha256 ? 32 : 16;
  std::vector<uint8_t> buf;
  files::PieceHasher hasher(algo);
  for (const auto& h : held) {
    const bool fits = h.length > 0 && h.offset < total && h.length <= total - h.offset && chunk_size > 0 &&
                      h.offset / chunk_size == (h.offset + h.length - 1) / chunk_size;
    bool same = false;
    if (fits && h.hash.size == digest_size) {
      buf.resize(h.length);
      std::string error;
      if (read(h.offset, h.length, buf.data(), error)) {
        hasher.reset();
        hasher.update(buf);
        same = hasher.finish() == h.hash;
      }
    }
    if (same) {
      out.matched.push_back(core::ByteRange{Bytes(h.offset), Bytes(h.length)});
      out.matched_hash.push_back(h.hash);
      out.matched_bytes += h.length;
    } else {
      ++out.rejected;
      // A range that does not even fit the transfer counts for what of it could.
      out.rejected_bytes += fits ? h.length : 0;
    }
  }
  return out;
}

}  // namespace braid::transfer
