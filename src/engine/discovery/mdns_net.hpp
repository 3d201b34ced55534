// The sockets under braid's mDNS responder and browser (src/core/discovery):
// the link's interfaces, one UDP socket per family on port 5353, joined to
// 224.0.0.251 and ff02::fb on every multicast interface, and a loop that
// feeds what arrives to the pure machine and sends what it asks for.
//
// Port 5353 is shared (SO_REUSEADDR and SO_REUSEPORT), so braid runs beside
// avahi-daemon or another braid on the same host: multicast reaches every
// socket bound to it. Packets go out with IP TTL / hop limit 255; a packet
// that arrives with less is taken only from an address on the interface's
// own subnet (RFC 6762 section 11: only the local link counts).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/discovery/mdns.hpp"
#include "engine/security/unique_fd.h"

namespace braid::discovery {

/// An interface that can carry mDNS: up, multicast, not loopback.
struct NetInterface {
  uint32_t index = 0;
  std::string name;
  struct Address {
    IpAddress address;
    unsigned prefix = 0;  // netmask length
  };
  std::vector<Address> addresses;  // IPv4 and IPv6, link-local included
};
inline bool operator==(const NetInterface::Address& a, const NetInterface::Address& b) {
  return a.address == b.address && a.prefix == b.prefix;
}

/// Every up, multicast-capable, non-loopback interface with an address (getifaddrs).
std::vector<NetInterface> multicast_interfaces();

/// Time on the steady clock as the core's Time.
Time steady_now();

/// The two sockets and the links joined on them. Not thread-safe: one thread drives it.
class MdnsSockets {
 public:
  /// Opens and joins on `interfaces`. A family with no socket (no IPv6 on
  /// this host) or an interface whose join fails is left out, with a note
  /// in `notes()`; fails when no socket opens, or with `need_link` when no
  /// link at all could be joined (a browser with nowhere to ask).
  static std::optional<MdnsSockets> open(const std::vector<NetInterface>& interfaces, std::string& error,
                                         bool need_link = true);

  /// Joins the group on interfaces that appeared since, forgets those that
  /// went away (call it now and then: interfaces come and go). True when
  /// the links changed.
  bool refresh(const std::vector<NetInterface>& interfaces);

  const std::vector<Link>& links() const { return links_; }
  const std::vector<NetInterface>& interfaces() const { return interfaces_; }
  const std::vector<std::string>& notes() const { return notes_; }

  void send(const Transmit& t);
  /// Waits until `deadline` (or `wake_fd` becomes readable, if given) for
  /// packets, handing each one that passes the link checks to `on_packet`.
  /// Returns false when woken by wake_fd.
  bool wait(std::chrono::steady_clock::time_point deadline, int wake_fd,
            const std::function<void(std::span<const uint8_t>, const PeerAddress&, const Link&)>& on_packet);

  uint64_t dropped_off_link() const { return off_link_; }

 private:
  bool on_link(const IpAddress& from, uint32_t interface) const;
  void read_all(int fd, bool v6, const std::function<void(std::span<const uint8_t>, const PeerAddress&, const Link&)>& on_packet);

  security::UniqueFd v4_, v6_;
  std::vector<NetInterface> interfaces_;
  std::vector<Link> links_;
  std::vector<std::string> notes_;
  uint64_t off_link_ = 0;
};

}  // namespace braid::discovery
