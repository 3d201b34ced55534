// Error values of the UDP lane transport. The core never throws: every fallible
// call returns one of these, and the engine turns them into messages for people.
#pragma once

#include <string_view>

namespace braid::transport {

enum class TransportError {
  ok = 0,
  truncated,             // a frame or header ran past the end of the datagram
  bad_varint,            // a variable-length integer was malformed
  unknown_frame,         // a frame type this version does not know
  wrong_packet_kind,     // e.g. a data packet arrived at the sender
  wrong_lane,            // the header names another lane
  bad_ack_range,         // an ack range underflows below packet number zero
  ack_of_unsent_packet,  // the peer acknowledged a packet number never sent
  buffer_too_small,      // the caller's buffer cannot hold even a minimal packet
  duplicate_packet,      // packet number already received (harmless, reported for counters)
};

constexpr std::string_view to_string(TransportError e) {
  switch (e) {
    case TransportError::ok: return "ok";
    case TransportError::truncated: return "truncated datagram";
    case TransportError::bad_varint: return "malformed variable-length integer";
    case TransportError::unknown_frame: return "unknown frame type";
    case TransportError::wrong_packet_kind: return "wrong packet kind for this endpoint";
    case TransportError::wrong_lane: return "packet for another lane";
    case TransportError::bad_ack_range: return "ack range below packet number zero";
    case TransportError::ack_of_unsent_packet: return "ack of a packet never sent";
    case TransportError::buffer_too_small: return "buffer too small";
    case TransportError::duplicate_packet: return "duplicate packet";
  }
  return "unknown error";
}

}  // namespace braid::transport
