// What a session needs to know about a lane, whatever carries it: one
// description for TCP lanes, braid's UDP lanes and byte-stream lanes (a Unix
// socket, a pty, a child's stdin/stdout). The session machines branch on
// these traits, never on the kind itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/units.hpp"

namespace braid::session {

/// Lane ids are the wire's: lane 0 is the bootstrap lane, each further lane
/// gets the next id from the sender.
using LaneNo = uint32_t;

enum class LaneKind : uint8_t { tcp, udp, stream };
const char* lane_kind_name(LaneKind k);

struct LaneTraits {
  LaneKind kind = LaneKind::tcp;
  /// Pieces complete in the order they started (a byte stream): a piece
  /// overtaken by a later one was lost (core::LaneConfig::in_order).
  bool in_order = true;
  /// The lane carries session messages (offer, acks, lane_closed, ...). A UDP
  /// lane carries piece data only: its pieces' headers and the acks that
  /// report a bad piece travel over a lane that carries messages.
  bool carries_messages = true;
  /// The lane's own transport tells when the peer holds every byte of a
  /// piece (a UDP lane's acks): that is the scheduler's ack. Otherwise the
  /// receiver's ack message is.
  bool transport_acks = false;
  /// The path's round trip as the transport saw it before any piece (the
  /// handshake, TCP_INFO): a slow lane's first probe would otherwise look fast.
  std::optional<Duration> rtt_hint;
  /// What the path carried the last time (a known peer's figures, which
  /// the lane's controller starts from): the scheduler plans with it until
  /// the first ack, instead of holding the lane to one small probe piece
  /// for a round trip while its controller already sends at that rate.
  std::optional<Rate> rate_hint = std::nullopt;

  static LaneTraits tcp(std::optional<Duration> rtt = std::nullopt) { return {LaneKind::tcp, true, true, false, rtt}; }
  static LaneTraits udp(std::optional<Duration> rtt = std::nullopt) { return {LaneKind::udp, false, false, true, rtt}; }
  static LaneTraits stream(std::optional<Duration> rtt = std::nullopt) {
    return {LaneKind::stream, true, true, false, rtt};
  }
};

/// A path a lane can take, as the engine found it (an interface and a peer
/// address, a socket path, a command). The machines never read the
/// addresses; `remote` is only passed back to the peer in udp_open.
struct PathSpec {
  LaneKind kind = LaneKind::tcp;
  std::string local;
  std::string remote;
  /// A backup path (a phone's cellular link, say): its lanes carry data
  /// only while no other path's lane does.
  bool backup = false;
  /// The interface its lanes leave through (empty: not known or not bound):
  /// what a --metered cap groups lanes by.
  std::string interface = {};
};

}  // namespace braid::session
