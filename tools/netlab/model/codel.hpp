// CoDel's drop decision (RFC 8289, "Controlled Delay Active Queue
// Management"), reduced to one question per dequeued packet: drop it or not?
// It keeps RFC 8289's state (first_above_time, drop_next, count, lastcount,
// dropping) and its control law interval / sqrt(count).
#pragma once

#include <cstdint>
#include <optional>

#include "link_params.hpp"
#include "units.hpp"

namespace netlab {

class CodelState {
 public:
  /// Called for each packet as it leaves the queue at `now`, after `sojourn`
  /// in it, with `bytes_left` still queued behind it. `max_packet` is the
  /// largest packet the link carries: CoDel never drops to below one of them.
  /// Returns true when the packet must be dropped.
  bool should_drop(TimePoint now, Duration sojourn, std::uint64_t bytes_left, std::uint64_t max_packet,
                   const CodelParams& params);

  /// The queue went empty: standing delay is gone (RFC 8289's dequeue of an
  /// empty queue).
  void on_empty();

  bool dropping() const { return dropping_; }

 private:
  bool ok_to_drop(TimePoint now, Duration sojourn, std::uint64_t bytes_left, std::uint64_t max_packet,
                  const CodelParams& params);
  static TimePoint control_law(TimePoint t, std::uint32_t count, Duration interval);

  std::optional<TimePoint> first_above_time_;
  TimePoint drop_next_{};
  std::uint32_t count_ = 0;
  std::uint32_t lastcount_ = 0;
  bool dropping_ = false;
};

}  // namespace netlab
