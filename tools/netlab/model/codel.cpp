#include "codel.hpp"

#include <cmath>

namespace netlab {

bool CodelState::ok_to_drop(TimePoint now, Duration sojourn, std::uint64_t bytes_left,
                            std::uint64_t max_packet, const CodelParams& params) {
  if (sojourn < params.target || bytes_left <= max_packet) {
    first_above_time_.reset();  // below target, or too little queued to matter
    return false;
  }
  if (!first_above_time_) {
    first_above_time_ = now + params.interval;  // above target: start the clock
    return false;
  }
  return now >= *first_above_time_;  // above target for a whole interval
}

TimePoint CodelState::control_law(TimePoint t, std::uint32_t count, Duration interval) {
  const double step = static_cast<double>(interval.count()) / std::sqrt(static_cast<double>(count));
  return t + Duration{static_cast<Duration::rep>(step)};
}

bool CodelState::should_drop(TimePoint now, Duration sojourn, std::uint64_t bytes_left,
                             std::uint64_t max_packet, const CodelParams& params) {
  const bool ok = ok_to_drop(now, sojourn, bytes_left, max_packet, params);
  if (dropping_) {
    if (!ok) {
      dropping_ = false;  // delay went below target: leave the drop state
      return false;
    }
    if (now >= drop_next_) {
      ++count_;
      drop_next_ = control_law(drop_next_, count_, params.interval);
      return true;
    }
    return false;
  }
  if (!ok) return false;
  // Enter the drop state. If we left it only recently, resume near the old
  // drop rate instead of starting over (RFC 8289, section 5.5).
  dropping_ = true;
  const std::uint32_t delta = count_ - lastcount_;
  count_ = (delta > 1 && now - drop_next_ < 16 * params.interval) ? delta : 1;
  drop_next_ = control_law(now, count_, params.interval);
  lastcount_ = count_;
  return true;
}

void CodelState::on_empty() {
  first_above_time_.reset();
  dropping_ = false;
}

}  // namespace netlab
