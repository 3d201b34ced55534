// Finding a lane by its wire id in a session's list of lanes. The caller holds
// the session's mutex.
#pragma once

#include <cstdint>

namespace braid::transfer {

template <class Lanes>
auto find_lane_by_id(const Lanes& lanes, uint32_t id) -> decltype(lanes.front().get()) {
  for (const auto& l : lanes)
    if (l->id == id) return l.get();
  return nullptr;
}

}  // namespace braid::transfer
