// Which braid protocol an offer needs, and what the receiver speaks: a
// sender facing an older receiver tells the user, in one line, which of its
// features that receiver cannot take (docs/engine.md, "Wire format"),
// instead of sending what the receiver would ignore as malformed.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/wire/messages.hpp"

namespace braid::wire {

/// The receiver's protocol as the sender knows it: what it said in its
/// addresses (protocol 8 and later), or, when it said nothing, "7 or
/// older" (`said` false, `version` kLastSilentProtocol).
struct PeerProtocol {
  uint32_t version = kProtocolVersion;
  bool said = true;
  /// "8", or "7 or older".
  std::string text() const;
  bool operator==(const PeerProtocol&) const = default;
};
PeerProtocol peer_protocol(const Addresses& first);

/// The oldest protocol a receiver must speak to take an offer, and the
/// feature of the offer that asks for it, named as the user asked for it
/// ("-o (owners)"). version 0: nothing beyond the basics.
struct ProtocolNeed {
  uint32_t version = 0;
  std::string feature;
};
/// `in_parts`: the offer goes as several frames (protocol 6). The newest
/// need wins; of equal ones the first found (in the order of the checks).
/// `entries`: the offer's (the sender's machine holds them apart from it).
ProtocolNeed offer_needs(const Offer& offer, std::span<const ManifestEntry> entries, bool in_parts);

/// One line for the user when `peer` cannot take what `need` asks ("the
/// receiver speaks braid protocol 6 and -o (owners) needs protocol 7: …");
/// empty when it can, or when the peer did not say and the need is no newer
/// than what a silent peer may speak (it may take it: sent as before).
std::string too_old(const ProtocolNeed& need, const PeerProtocol& peer);

/// The protocol a lane's join says: the receiver's when it is older than
/// ours (a sender that keeps to the older protocol's features speaks it
/// exactly — the offer's checks above make sure), else ours.
uint32_t join_version(const PeerProtocol& peer);

/// The receiver answers a continued offer part by part if asked (protocol
/// 9, wire::AcceptPart): never needed, so never a reason to refuse; a
/// sender asks only a receiver that said 9 or newer.
bool takes_early_answers(const PeerProtocol& peer);
/// The same for entries said to come in path order (protocol 10, Offer::ordered).
bool takes_ordered_entries(const PeerProtocol& peer);
/// The same for a sync's verdicts in several frames (protocol 11,
/// Offer::verdicts_apart, wire::AcceptFiles): needed only by a receiver
/// with more than one accept may list, which refuses an older sender.
bool takes_verdicts_apart(const PeerProtocol& peer);
/// Why a receiver refuses a sync whose `verdicts` are more than one accept
/// lists (`per_accept`) from a sender that did not say it takes them apart.
std::string too_many_verdicts(size_t verdicts, size_t per_accept);

}  // namespace braid::wire
