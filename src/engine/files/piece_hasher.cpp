#include "engine/files/piece_hasher.hpp"

#include <openssl/evp.h>
#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
// The library's plain XXH3 is its SSE2 build (16 GB/s here); the _dispatch
// entry points pick AVX2/AVX-512 at run time (64 GB/s). This header renames
// the calls below to them.
#include <xxh_x86dispatch.h>
#endif

#include <algorithm>
#include <stdexcept>

namespace braid::files {

struct PieceHasher::State {
  XXH3_state_t* xxh = nullptr;
  EVP_MD_CTX* sha = nullptr;
  ~State() {
    if (xxh) XXH3_freeState(xxh);
    if (sha) EVP_MD_CTX_free(sha);
  }
};

PieceHasher::PieceHasher(wire::HashAlgo algo) : algo_(algo), state_(std::make_unique<State>()) {
  if (algo_ == wire::HashAlgo::sha256) {
    state_->sha = EVP_MD_CTX_new();
  } else {
    state_->xxh = XXH3_createState();
  }
  if (!state_->sha && !state_->xxh) throw std::bad_alloc();
  reset();
}

PieceHasher::~PieceHasher() = default;
PieceHasher::PieceHasher(PieceHasher&&) noexcept = default;
PieceHasher& PieceHasher::operator=(PieceHasher&&) noexcept = default;

void PieceHasher::reset() {
  if (state_->sha) {
    EVP_DigestInit_ex(state_->sha, EVP_sha256(), nullptr);
  } else {
    XXH3_128bits_reset(state_->xxh);
  }
}

void PieceHasher::update(std::span<const uint8_t> data) {
  if (data.empty()) return;
  if (state_->sha) {
    EVP_DigestUpdate(state_->sha, data.data(), data.size());
  } else {
    XXH3_128bits_update(state_->xxh, data.data(), data.size());
  }
}

wire::Digest PieceHasher::finish() {
  wire::Digest d;
  if (state_->sha) {
    unsigned int n = 0;
    EVP_DigestFinal_ex(state_->sha, d.bytes.data(), &n);
    d.size = static_cast<uint8_t>(n);
  } else {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(state_->xxh));
    std::copy(std::begin(c.digest), std::end(c.digest), d.bytes.begin());
    d.size = 16;
  }
  reset();
  return d;
}

namespace {
void sort_by_offset(std::vector<PieceRecord>& p) {
  std::sort(p.begin(), p.end(), [](const PieceRecord& a, const PieceRecord& b) { return a.offset < b.offset; });
}
}  // namespace

wire::Digest root_hash(wire::HashAlgo algo, std::vector<PieceRecord> pieces) {
  sort_by_offset(pieces);
  PieceHasher h(algo);
  for (const auto& p : pieces) {
    uint8_t buf[16];
    for (int i = 0; i < 8; ++i) {
      buf[i] = static_cast<uint8_t>(p.offset >> (56 - 8 * i));
      buf[8 + i] = static_cast<uint8_t>(p.length >> (56 - 8 * i));
    }
    h.update(buf);
    h.update(std::span<const uint8_t>(p.hash.bytes.data(), p.hash.size));
  }
  return h.finish();
}

bool pieces_tile(std::vector<PieceRecord> pieces, uint64_t total) {
  sort_by_offset(pieces);
  uint64_t next = 0;
  for (const auto& p : pieces) {
    if (p.offset != next) return false;
    next += p.length;
  }
  return next == total;
}

wire::Digest root_hash_of_ranges(wire::HashAlgo algo, std::vector<wire::HeldRange> ranges) {
  std::vector<PieceRecord> r;
  r.reserve(ranges.size());
  for (const auto& x : ranges) r.push_back({x.offset, x.length, x.hash});
  return root_hash(algo, std::move(r));
}

}  // namespace braid::files
