// DNS-SD over Multicast DNS (RFC 6763 over RFC 6762): the responder that
// announces one service instance and the browser that finds instances of a
// service type. Both pure, like the scheduler: packets and time go in
// (`handle_packet(bytes, from, now)`, `handle_timeout(now)`), packets to send
// come out (`poll_transmit()`), and `poll_timeout()` says when to call
// handle_timeout next. No sockets, threads or clocks; randomness (the delays
// RFC 6762 asks for) comes from a seed the caller gives.
//
// Call order for a driver: after any handle_*, drain poll_transmit() until
// it is empty, then sleep until poll_timeout() or the next packet.
//
// Links: the driver names each (interface, family) it has joined the group
// on as a Link; every Transmit says which link (and, for a unicast reply,
// to whom), every packet comes in with the link it arrived on.
//
// Bounds on what a peer can make these do: decode()'s (dns_message.hpp);
// the browser caches at most kMaxCachedRecords records and keeps only those
// of the browsed type and the hosts they name; the responder keeps at most
// kMaxPendingTransmits packets queued and multicasts its answer set at most
// once a second per link (RFC 6762 section 6).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/discovery/dns_message.hpp"
#include "core/units.hpp"

namespace braid::discovery {

inline constexpr uint16_t kMdnsPort = 5353;
/// RFC 6762 section 10: 120 s for records naming a host (SRV, A, AAAA), 75 minutes for the others.
inline constexpr uint32_t kHostRecordTtl = 120;
inline constexpr uint32_t kOtherRecordTtl = 4500;
/// RFC 6762 section 6.7: a legacy unicast reply carries TTLs of at most 10 s.
inline constexpr uint32_t kLegacyUnicastTtl = 10;
inline constexpr size_t kMaxCachedRecords = 512;
inline constexpr size_t kMaxPendingTransmits = 64;

struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // IPv4 in the first 4

  static IpAddress v4(std::array<uint8_t, 4> b);
  static IpAddress v6_of(std::array<uint8_t, 16> b);
  bool is_link_local() const;  // 169.254/16, fe80::/10
  std::string str() const;     // "10.0.0.1", "fe80::1" (no scope)
  bool operator==(const IpAddress&) const = default;
};

/// One (interface, family) the driver sends and receives on.
struct Link {
  uint32_t interface = 0;  // the OS's interface index
  bool v6 = false;
  bool operator==(const Link&) const = default;
};

/// Where a packet came from, or where a unicast reply goes.
struct PeerAddress {
  IpAddress address;
  uint16_t port = kMdnsPort;
  bool operator==(const PeerAddress&) const = default;
};

struct Transmit {
  Link link;
  std::optional<PeerAddress> unicast_to;  // none: to the group (224.0.0.251 / ff02::fb) port 5353
  std::vector<uint8_t> bytes;
};

/// The service types and names braid uses.
DnsName braid_service_type();    // _braid._tcp.local
DnsName services_meta_query();   // _services._dns-sd._udp.local (RFC 6763 section 9)

// ---------------------------------------------------------------------------

struct ResponderConfig {
  std::string instance;          // the instance label, e.g. the receiver's name
  DnsName service_type = braid_service_type();
  DnsName host;                  // e.g. braid-1a2b3c4d.local
  uint16_t port = 0;
  std::vector<std::string> txt;  // "key=value" strings (RFC 6763 6.3)
  struct Interface {
    uint32_t index = 0;
    std::vector<IpAddress> addresses;  // this interface's: answered on it only (RFC 6762 6.2)
    bool operator==(const Interface&) const = default;
  };
  std::vector<Interface> interfaces;
  uint64_t seed = 1;
};

/// Announces one instance: probes for its name (RFC 6762 8.1; a name taken
/// by someone else gets " (2)", " (3)"… as 9 suggests), announces twice a
/// second apart (8.3), answers queries for the service type, the instance,
/// its host and the meta-query, with known-answer suppression (7.1), and
/// says goodbye (TTL 0, 10.1) on shutdown().
class Responder {
 public:
  enum class State { probing, announced, stopped };

  Responder(ResponderConfig config, Time now);

  void handle_packet(std::span<const uint8_t> bytes, const PeerAddress& from, const Link& link, Time now);
  void handle_timeout(Time now);
  /// New TXT strings (e.g. a new code's number): announced again, twice.
  void set_txt(std::vector<std::string> txt, Time now);
  /// The interfaces or their addresses changed: the records are announced
  /// again, twice, on every link now there. Addresses gone are left to
  /// expire (120 s) in other hosts' caches.
  void set_interfaces(std::vector<ResponderConfig::Interface> interfaces, Time now);
  const std::vector<ResponderConfig::Interface>& interfaces() const { return cfg_.interfaces; }
  /// Queues the goodbye on every link; nothing more is sent after it.
  void shutdown(Time now);

  std::optional<Transmit> poll_transmit();
  Time poll_timeout() const;

  State state() const { return state_; }
  /// The instance label in use (after any rename for a conflict).
  const std::string& instance() const { return instance_; }
  DnsName instance_name() const;
  uint64_t malformed() const { return malformed_; }
  uint64_t answered() const { return answered_; }

 private:
  struct Pending {
    Time at;
    Transmit tx;
  };
  std::vector<Link> links() const;
  std::vector<Record> records_for(const Link& link, uint32_t ttl_override, bool use_override) const;
  std::vector<IpAddress> addresses_on(uint32_t interface) const;
  void queue(Time at, Transmit tx);
  void start_probing(Time now);
  void send_probe(Time now);
  void announce(Time now);
  void answer(const Message& q, const PeerAddress& from, const Link& link, Time now);
  uint64_t random();

  ResponderConfig cfg_;
  std::string instance_;
  Time now_;  // the latest time given: what is due by then poll_transmit hands out
  State state_ = State::probing;
  int renames_ = 0;
  int probes_sent_ = 0;
  Time next_probe_ = Time::never();
  int announcements_left_ = 0;
  Time next_announce_ = Time::never();
  std::map<std::pair<uint32_t, bool>, Time> last_multicast_;     // per link: the last full answer
  std::map<std::pair<uint32_t, bool>, Time> last_probe_answer_;  // per link: the last answer to a probe
  std::deque<Pending> pending_;
  uint64_t rng_;
  uint64_t malformed_ = 0;
  uint64_t answered_ = 0;
};

// ---------------------------------------------------------------------------

/// An instance the browser has seen in full: its SRV, TXT and at least one address.
struct ServiceInstance {
  std::string instance;  // the instance label
  DnsName host;
  uint16_t port = 0;
  std::vector<std::string> txt;
  struct Address {
    IpAddress address;
    uint32_t interface = 0;  // where it was heard: the scope of a link-local IPv6 address
  };
  std::vector<Address> addresses;
  /// The value of "key=" in the TXT strings (RFC 6763 6.4: the first one counts), if present.
  std::optional<std::string> txt_value(std::string_view key) const;
};

struct BrowserConfig {
  DnsName service_type = braid_service_type();
  std::vector<Link> links;
  uint64_t seed = 1;
};

/// Browses for one service type: queries on every link, the first after a
/// random 20-120 ms, then 1 s later, then at doubling intervals up to an
/// hour (RFC 6762 5.2), each with the PTR answers it already holds at more
/// than half their TTL (7.1); asks for an instance's SRV/TXT or a host's
/// addresses when a response left them out. Caches what it hears until the
/// TTL runs out; a goodbye (TTL 0) removes the record at once.
class Browser {
 public:
  Browser(BrowserConfig config, Time now);

  void handle_packet(std::span<const uint8_t> bytes, const PeerAddress& from, const Link& link, Time now);
  void handle_timeout(Time now);
  std::optional<Transmit> poll_transmit();
  Time poll_timeout() const;

  /// Every instance complete now (SRV, TXT and an address), by name.
  std::vector<ServiceInstance> instances(Time now) const;
  size_t cached_records() const { return cache_.size(); }
  uint64_t malformed() const { return malformed_; }
  uint64_t dropped_records() const { return dropped_; }
  /// When the last query went out, and the interval before the next.
  Duration query_interval() const { return interval_; }

 private:
  struct Cached {
    Record rec;
    uint32_t interface = 0;
    Time received;
    Time expires;
  };
  void send_queries(Time now);
  void store(const Record& rec, uint32_t interface, Time now);
  void expire(Time now);
  uint64_t random();

  BrowserConfig cfg_;
  std::vector<Cached> cache_;
  std::deque<Transmit> out_;
  Time next_query_;
  Duration interval_ = Duration::seconds(1);
  uint64_t rng_;
  uint64_t malformed_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace braid::discovery
