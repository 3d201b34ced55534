#include "core/transport/ledbat.hpp"

#include <algorithm>

namespace braid::transport::ledbat {

namespace {
constexpr Duration kMinute = Duration::seconds(60);
}  // namespace

DelayFilter::DelayFilter(size_t current_filter)
    : current_filter_(std::clamp<size_t>(current_filter, 1, kMaxCurrentFilter)) {
  base_minutes_.fill(Duration::infinite());
  recent_.fill(Duration::infinite());
}

Duration DelayFilter::base() const {
  Duration best = Duration::infinite();
  for (const auto& d : base_minutes_) best = std::min(best, d);
  return best;
}

void DelayFilter::on_sample(Time now, Duration sample) {
  const int64_t minute = now.ns() / kMinute.ns();
  if (minute != current_minute_) {
    // A new minute opens a new bucket; the oldest of ten is forgotten.
    if (current_minute_ >= 0) base_index_ = (base_index_ + 1) % kBaseHistory;
    base_minutes_[base_index_] = sample;
    current_minute_ = minute;
  } else {
    base_minutes_[base_index_] = std::min(base_minutes_[base_index_], sample);
  }
  recent_[recent_index_] = sample;
  recent_index_ = (recent_index_ + 1) % current_filter_;
  recent_count_ = std::min(recent_count_ + 1, current_filter_);
  Duration current = Duration::infinite();
  for (size_t i = 0; i < recent_count_; ++i) current = std::min(current, recent_[i]);
  queuing_delay_ = current - base();
}

}  // namespace braid::transport::ledbat
