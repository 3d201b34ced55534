#include "core/wire/protocol_needs.hpp"

#include <algorithm>

namespace braid::wire {

std::string PeerProtocol::text() const {
  return std::to_string(version) + (said ? "" : " or older");
}

PeerProtocol peer_protocol(const Addresses& first) {
  if (first.protocol == 0) return PeerProtocol{kLastSilentProtocol, false};
  return PeerProtocol{first.protocol, true};
}

ProtocolNeed offer_needs(const Offer& offer, std::span<const ManifestEntry> entries, bool in_parts) {
  ProtocolNeed need;
  auto needs = [&](uint32_t version, const char* feature) {
    if (version > need.version) need = ProtocolNeed{version, feature};
  };
  const SyncOptions& s = offer.sync;
  if (!s.backup_suffix.empty()) needs(8, "--backup-suffix");
  if (!s.backup_dir.empty()) needs(8, "--backup-dir");
  for (const auto& e : entries) {
    if (need.version >= 7) break;  // nothing below can ask for more
    if (e.owner) needs(7, "-o (owners)");
    if (e.group) needs(7, "-g (groups)");
    if (e.xattrs && e.xattrs->with_xattrs) needs(7, "-X (extended attributes)");
    if (e.xattrs && e.xattrs->with_acls) needs(7, "-A (ACLs)");
    if (e.data) needs(5, "-S (sparse files)");
    if (e.hard_link_to) needs(5, "-H (hard links)");
  }
  if (in_parts) needs(6, "an offer of this many entries (sent in parts)");
  if (s.dry_run) needs(4, "--dry-run");
  if (s.delete_extraneous) needs(4, "--delete");
  if (s.sync || s.checksum || s.update || s.ignore_existing) needs(4, "--sync");
  if (offer.discard) needs(4, "braid probe");
  return need;
}

std::string too_old(const ProtocolNeed& need, const PeerProtocol& peer) {
  if (need.version <= peer.version) return {};
  // A flag's feature ("-o (owners)") can be left out: say which flag.
  const std::string flag = need.feature.rfind('-', 0) == 0 ? need.feature.substr(0, need.feature.find(' ')) : "";
  return "the receiver speaks braid protocol " + peer.text() + ", and " + need.feature + " needs protocol " +
         std::to_string(need.version) + ": update braid on the receiver" +
         (flag.empty() ? std::string() : ", or send without " + flag);
}

uint32_t join_version(const PeerProtocol& peer) { return std::min(peer.version, kProtocolVersion); }

bool takes_early_answers(const PeerProtocol& peer) { return peer.said && peer.version >= 9; }

bool takes_ordered_entries(const PeerProtocol& peer) { return peer.said && peer.version >= 10; }

bool takes_verdicts_apart(const PeerProtocol& peer) { return peer.said && peer.version >= 11; }

std::string too_many_verdicts(size_t verdicts, size_t per_accept) {
  return "this sync has " + std::to_string(verdicts) + " files here to compare, more than the " +
         std::to_string(per_accept) +
         " one answer holds, and the sender did not say it takes them in several (braid 11 and newer do, once "
         "they know the receiver's version): run braid 11 or newer on the sender, or sync fewer files at a time";
}

}  // namespace braid::wire
