// The session messages each side can say, as values: what the machines take
// in (handle_message) and put out (SendMessage). Piece data frames are not
// among them: the engine's lanes carry those (core/session/*.hpp's SendPiece
// and the receiver's handle_piece_*).
#pragma once

#include <optional>
#include <span>
#include <variant>
#include <vector>

#include "core/wire/messages.hpp"

namespace braid::session {

/// Sender -> receiver.
using ToReceiver = std::variant<wire::LaneJoin, wire::Offer, wire::LaneClosed, wire::Done, wire::ErrorMessage,
                                wire::Bye, wire::UdpOpen, wire::UdpPiece, wire::Cancel, wire::OfferPart>;
/// Receiver -> sender.
using ToSender = std::variant<wire::LaneWelcome, wire::Addresses, wire::Accept, wire::Refuse, wire::Ack,
                              wire::LaneClosed, wire::TransferResult, wire::ErrorMessage, wire::UdpReady,
                              wire::LaneAck, wire::AcceptPart, wire::AcceptFiles>;

/// A verified piece: where it lies in the transfer and its hash. The same
/// fields as a held range, which is a piece record from an earlier run.
using PieceRecord = wire::HeldRange;

}  // namespace braid::session

namespace braid::session {

/// A message's frame type and payload, for a lane to seal.
struct Encoded {
  wire::FrameType type{};
  std::vector<uint8_t> payload;
};
Encoded encode(const ToReceiver& m);
Encoded encode(const ToSender& m);
/// The message in a frame of `type`, or nothing if the type is not one this
/// side hears or the payload is malformed.
std::optional<ToSender> decode_to_sender(wire::FrameType type, std::span<const uint8_t> payload);
std::optional<ToReceiver> decode_to_receiver(wire::FrameType type, std::span<const uint8_t> payload);

}  // namespace braid::session
