#include "engine/transfer/piece_buffers.hpp"

#include <algorithm>

namespace braid::transfer {

namespace {
// New buffers are rounded up to this, so pieces whose sizes differ by a
// few bytes share buffers.
constexpr uint64_t kGrain = 64 * 1024;
}  // namespace

std::shared_ptr<PieceBuffers> PieceBuffers::make(uint64_t keep_bytes) {
  return std::shared_ptr<PieceBuffers>(new PieceBuffers(keep_bytes));
}

PieceBuffers::~PieceBuffers() {
  for (auto& [capacity, p] : kept_) delete[] p;
}

std::shared_ptr<uint8_t[]> PieceBuffers::take(uint64_t n) {
  n = std::max<uint64_t>(n, 1);
  uint8_t* p = nullptr;
  uint64_t capacity = 0;
  {
    std::lock_guard lock(mu_);
    auto best = kept_.end();
    for (auto it = kept_.begin(); it != kept_.end(); ++it)
      if (it->first >= n && (best == kept_.end() || it->first < best->first)) best = it;
    if (best != kept_.end()) {
      capacity = best->first;
      p = best->second;
      kept_bytes_ -= capacity;
      *best = kept_.back();
      kept_.pop_back();
      ++reused_;
    }
  }
  if (!p) {
    capacity = (n + kGrain - 1) / kGrain * kGrain;
    p = new uint8_t[capacity];  // default-initialised: no page is touched before its first use
  }
  std::weak_ptr<PieceBuffers> pool = weak_from_this();
  return std::shared_ptr<uint8_t[]>(p, [pool, capacity](uint8_t* q) {
    if (auto live = pool.lock()) {
      live->give_back(q, capacity);
    } else {
      delete[] q;
    }
  });
}

void PieceBuffers::give_back(uint8_t* p, uint64_t capacity) {
  {
    std::lock_guard lock(mu_);
    if (kept_bytes_ + capacity <= keep_limit_) {
      kept_.emplace_back(capacity, p);
      kept_bytes_ += capacity;
      return;
    }
  }
  delete[] p;
}

uint64_t PieceBuffers::kept_bytes() const {
  std::lock_guard lock(mu_);
  return kept_bytes_;
}

uint64_t PieceBuffers::reused() const {
  std::lock_guard lock(mu_);
  return reused_;
}

}  // namespace braid::transfer
