// braid on the local network: `braid recv` announces itself as a DNS-SD
// service (_braid._tcp.local) and `braid send PATH… CODE|LABEL` or
// `braid peers --visible` browse for it (docs/discovery.md).
//
// What an announcement carries — all of it public:
//   instance name  the receiver's name (its identity's label, e.g. the host name)
//   SRV            the receiver's host record (braid-<8 hex of its key's
//                  fingerprint>.local, so it never collides with avahi's
//                  <hostname>.local) and its TCP port
//   A / AAAA       the receiver's addresses on the interface the answer goes out on
//   TXT            v=1 (this announcement's format), n=NNNN (the pairing
//                  code's public number, when the code has one) and
//                  fp=SHA256:… (the receiver's key fingerprint)
// Never the code's words, nor anything else secret.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/discovery/mdns.hpp"
#include "core/units.hpp"
#include "engine/discovery/mdns_net.hpp"

namespace braid::discovery {

/// The announcement format (TXT "v=").
inline constexpr std::string_view kTxtVersion = "1";

/// The public number of a pairing code: its first group when that is
/// exactly four digits ("4711-apple-river-stone-cloud" → "4711"); none
/// otherwise. The one place that knows the code's shape: the integrator
/// points it at PairingCode::rendezvous() once the new codes are in.
std::optional<std::string> rendezvous_of(std::string_view code);

/// What `braid send`'s last operand names.
enum class TargetKind { address, code, label };
/// An address if it holds ':' or is a numeric IP; a code if it has a public
/// number (rendezvous_of) or parses as a pairing code; a label if
/// `is_pinned_label` says so; otherwise a host name (an address, as before).
TargetKind classify_target(std::string_view text, const std::function<bool(std::string_view)>& is_pinned_label);

struct AnnounceConfig {
  std::string name;                        // the instance name
  std::string fingerprint;                 // "SHA256:…"
  uint16_t port = 0;
  std::optional<std::string> rendezvous;   // the code's public number
  /// Which local addresses the receiver listens on: every address of a
  /// family with `wildcard_v4`/`wildcard_v6`, else those in `bound`.
  bool wildcard_v4 = false, wildcard_v6 = false;
  std::vector<std::string> bound;          // numeric addresses without port
};

/// The TXT strings for an announcement.
std::vector<std::string> announcement_txt(const std::optional<std::string>& rendezvous, const std::string& fingerprint);

/// Runs a Responder on its own thread until destroyed (then says goodbye).
class Announcer {
 public:
  /// Fails (with a sentence) when no interface can carry it.
  static std::unique_ptr<Announcer> start(const AnnounceConfig& cfg, std::string& error);
  ~Announcer();
  Announcer(const Announcer&) = delete;
  Announcer& operator=(const Announcer&) = delete;

  /// A new code went live: announce its number (none: announce without one).
  void set_rendezvous(std::optional<std::string> rendezvous);
  /// Notes from opening the sockets (an interface it could not join…).
  const std::vector<std::string>& notes() const { return notes_; }
  /// The instance name in use (another host may have had ours first).
  std::string instance() const;

 private:
  Announcer() = default;
  void run();

  AnnounceConfig cfg_;
  std::optional<MdnsSockets> sockets_;
  std::optional<Responder> responder_;
  std::vector<std::string> notes_;
  security::UniqueFd wake_;
  mutable std::mutex mu_;
  std::optional<std::optional<std::string>> new_rendezvous_;  // under mu_
  std::string instance_;                                     // under mu_
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// A braid receiver seen on the local network.
struct VisiblePeer {
  std::string name;                         // the instance name
  std::string host;                         // its SRV target
  uint16_t port = 0;
  std::optional<std::string> rendezvous;    // TXT n=
  std::optional<std::string> fingerprint;   // TXT fp=
  std::string version;                      // TXT v=
  /// Every announced address as HOST:PORT for connect, IPv4 first, then
  /// IPv6, link-local ones with their interface ("[fe80::1%eth0]:7878").
  std::vector<std::string> addresses;
};

/// Browses for _braid._tcp for at most `wait`; returns early, once a peer
/// matches, when `match` is given. `error` is set when no socket could be
/// opened (then the result is empty).
std::vector<VisiblePeer> browse(Duration wait, const std::function<bool(const VisiblePeer&)>& match, std::string& error);

/// Every braid receiver visible within `wait` (for `braid peers`).
std::vector<VisiblePeer> browse_visible(Duration wait);

}  // namespace braid::discovery
