#include "core/session/lane_traits.hpp"

namespace braid::session {

const char* lane_kind_name(LaneKind k) {
  switch (k) {
    case LaneKind::tcp: return "tcp";
    case LaneKind::udp: return "udp";
    case LaneKind::stream: return "stream";
  }
  return "?";
}

}  // namespace braid::session
