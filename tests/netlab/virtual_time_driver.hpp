// Drives a LinkDirection in virtual time for tests: offers packets at their
// arrival times and takes deliveries exactly when the model says they are due.
#pragma once

#include <cstdint>
#include <vector>

#include "model/link_direction.hpp"

namespace netlab::test {

using namespace std::chrono_literals;

struct Arrival {
  TimePoint at;
  Packet packet;
};

struct Delivery {
  TimePoint at;
  std::uint64_t tag;
};

inline Packet packet(std::uint64_t tag, std::uint32_t bytes = 1500, std::uint32_t segments = 1) {
  return Packet{bytes, segments, tag, {}};
}

/// `count` packets of `bytes`, one every `gap` from `start`, tagged 0..count-1.
inline std::vector<Arrival> steady(TimePoint start, Duration gap, std::size_t count, std::uint32_t bytes = 1500) {
  std::vector<Arrival> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back({start + gap * static_cast<Duration::rep>(i), packet(i, bytes)});
  return out;
}

/// Runs until every arrival is offered and everything deliverable is out,
/// or until `until`. Arrivals must be sorted by time.
inline std::vector<Delivery> run(LinkDirection& link, std::vector<Arrival> arrivals, TimePoint until = at(3600s)) {
  std::vector<Delivery> out;
  std::size_t next = 0;
  while (true) {
    const auto due = link.poll_timeout();
    const bool have_arrival = next < arrivals.size();
    if (!have_arrival && !due) break;
    // Deliveries due at the same instant as an arrival go first.
    if (due && (!have_arrival || *due <= arrivals[next].at)) {
      if (*due > until) break;
      while (auto p = link.poll_delivery(*due)) out.push_back({*due, p->tag});
      continue;
    }
    if (arrivals[next].at > until) break;
    link.handle_packet(std::move(arrivals[next].packet), arrivals[next].at);
    ++next;
  }
  return out;
}

}  // namespace netlab::test
