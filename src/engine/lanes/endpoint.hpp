// Socket addresses as braid prints and parses them: "127.0.0.1:7878",
// "[::1]:7878", or a host name; plus the machine's interface addresses.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <optional>
#include <string>
#include <vector>

namespace braid::lanes {

struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;

  int family() const { return addr.ss_family; }
  uint16_t port() const;
  void set_port(uint16_t p);
  bool is_loopback() const;
  bool is_link_local() const;
  bool is_wildcard() const;
  /// "1.2.3.4:5" or "[::1]:5".
  std::string str() const;
  /// The address without the port; an IPv6 link-local one with its scope ("fe80::1%eth0").
  std::string host() const;
  bool same_host(const Endpoint& o) const { return host() == o.host(); }
};

/// Parses a numeric "ADDR:PORT" / "[V6]:PORT" / "ADDR" (then `default_port`);
/// an IPv6 address may carry a scope ("[fe80::1%eth0]:7878"), which must
/// name an interface of this host.
std::optional<Endpoint> parse_numeric_endpoint(const std::string& text, uint16_t default_port);

/// The text has the shape HOST[:PORT] or [V6][:PORT], a port (if any) a
/// number from 1 to 65535: what the command line checks before any connect.
bool is_host_port(const std::string& text);

/// Resolves "HOST[:PORT]" (names via getaddrinfo); all addresses, IPv4 and
/// IPv6, in resolver order. Empty with `error` set on failure.
std::vector<Endpoint> resolve_endpoint(const std::string& text, uint16_t default_port, std::string& error);

/// Every up interface address of this machine (no port); IPv6 link-local
/// ones with their scope ("fe80::1%eth0"), IPv4 link-local left out.
std::vector<Endpoint> interface_addresses();

Endpoint local_endpoint_of(int fd);
Endpoint peer_endpoint_of(int fd);

}  // namespace braid::lanes
