// The maximum of samples over the last N rounds (BBR's BtlBw filter, draft
// §4.5.2.2 uses N = 10 round trips). One slot per round in a ring: exact, and
// O(N) only when a round starts.
#pragma once

#include <array>
#include <cstdint>

namespace braid::transport {

template <class T, size_t N>
class RoundMaxFilter {
 public:
  /// Feeds a sample taken in round `round` (rounds never go backwards).
  void update(uint64_t round, T sample) {
    advance(round);
    if (sample > slots_[round % N]) slots_[round % N] = sample;
    if (sample > best_) best_ = sample;
  }
  /// Ages the filter to `round` without a sample.
  void advance(uint64_t round) {
    if (!started_) {
      started_ = true;
      round_ = round;
      return;
    }
    if (round == round_) return;
    const uint64_t steps = round - round_ >= N ? N : round - round_;
    for (uint64_t i = 1; i <= steps; ++i) slots_[(round_ + i) % N] = T{};
    round_ = round;
    best_ = T{};
    for (const auto& s : slots_) if (s > best_) best_ = s;
  }
  T best() const { return best_; }
  void reset(T value, uint64_t round) {
    slots_.fill(T{});
    slots_[round % N] = value;
    best_ = value;
    round_ = round;
    started_ = true;
  }

 private:
  std::array<T, N> slots_{};
  T best_{};
  uint64_t round_ = 0;
  bool started_ = false;
};

}  // namespace braid::transport
