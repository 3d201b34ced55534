#include "engine/lanes/endpoint.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>

#include <cstdlib>
#include <cstring>

namespace braid::lanes {

uint16_t Endpoint::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  return 0;
}

void Endpoint::set_port(uint16_t p) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&addr)->sin_port = htons(p);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = htons(p);
}

bool Endpoint::is_loopback() const {
  if (family() == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr.s_addr) >> 24) == 127;
  if (family() == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&a)) return a.s6_addr[12] == 127;
  }
  return false;
}

bool Endpoint::is_link_local() const {
  if (family() == AF_INET6) return IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr);
  if (family() == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr.s_addr) >> 16) == 0xA9FE;
  return false;
}

bool Endpoint::is_wildcard() const {
  if (family() == AF_INET) return reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr.s_addr == htonl(INADDR_ANY);
  if (family() == AF_INET6)
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr);
  return false;
}

std::string Endpoint::host() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, buf, sizeof buf);
  } else if (family() == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    // A link-local address means nothing without its interface (RFC 4007).
    if (v6->sin6_scope_id != 0 && IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr)) {
      char name[IF_NAMESIZE] = {};
      return std::string(buf) + "%" +
             (if_indextoname(v6->sin6_scope_id, name) ? std::string(name) : std::to_string(v6->sin6_scope_id));
    }
  } else {
    return "?";
  }
  return buf;
}

std::string Endpoint::str() const {
  const std::string h = host();
  return family() == AF_INET6 ? "[" + h + "]:" + std::to_string(port()) : h + ":" + std::to_string(port());
}

namespace {

// Splits "HOST:PORT", "[V6]:PORT", "HOST", "V6" into host and port text.
bool split_host_port(const std::string& text, std::string& host, std::string& port) {
  if (text.empty()) return false;
  if (text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos) return false;
    host = text.substr(1, close - 1);
    if (close + 1 == text.size()) return true;
    if (text[close + 1] != ':') return false;
    port = text.substr(close + 2);
    return !port.empty();
  }
  const auto colon = text.rfind(':');
  if (colon != std::string::npos && text.find(':') == colon) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    return !port.empty();
  }
  host = text;  // no port, or a bare IPv6 address
  return true;
}

bool parse_port(const std::string& s, uint16_t& out) {
  if (s.empty() || s.size() > 5) return false;
  unsigned v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  if (v > 65535) return false;
  out = static_cast<uint16_t>(v);
  return true;
}

}  // namespace

std::optional<Endpoint> parse_numeric_endpoint(const std::string& text, uint16_t default_port) {
  std::string host, port_text;
  if (!split_host_port(text, host, port_text)) return std::nullopt;
  uint16_t port = default_port;
  if (!port_text.empty() && !parse_port(port_text, port)) return std::nullopt;
  Endpoint e;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&e.addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&e.addr);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    e.len = sizeof(sockaddr_in);
  } else if (const auto pct = host.find('%');
             inet_pton(AF_INET6, host.substr(0, pct).c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    e.len = sizeof(sockaddr_in6);
    if (pct != std::string::npos) {  // "fe80::1%eth0" or "fe80::1%2": the scope
      const std::string scope = host.substr(pct + 1);
      char* end = nullptr;
      const unsigned long n = std::strtoul(scope.c_str(), &end, 10);
      v6->sin6_scope_id = !scope.empty() && *end == '\0' ? static_cast<uint32_t>(n) : if_nametoindex(scope.c_str());
      if (v6->sin6_scope_id == 0) return std::nullopt;  // no such interface here
    }
  } else {
    return std::nullopt;
  }
  e.set_port(port);
  return e;
}

bool is_host_port(const std::string& text) {
  std::string host, port_text;
  uint16_t port = 0;
  if (!split_host_port(text, host, port_text) || host.empty()) return false;
  return port_text.empty() || (parse_port(port_text, port) && port != 0);
}

std::vector<Endpoint> resolve_endpoint(const std::string& text, uint16_t default_port, std::string& error) {
  if (auto e = parse_numeric_endpoint(text, default_port)) return {*e};
  std::string host, port_text;
  uint16_t port = default_port;
  if (!split_host_port(text, host, port_text) || (!port_text.empty() && !parse_port(port_text, port))) {
    error = "'" + text + "' is not HOST[:PORT]";
    return {};
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_family = AF_UNSPEC;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0) {
    error = "cannot resolve '" + host + "': " + gai_strerror(rc);
    return {};
  }
  std::vector<Endpoint> out;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    Endpoint e;
    std::memcpy(&e.addr, ai->ai_addr, ai->ai_addrlen);
    e.len = ai->ai_addrlen;
    e.set_port(port);
    out.push_back(e);
  }
  freeaddrinfo(res);
  if (out.empty()) error = "'" + host + "' has no address";
  return out;
}

std::vector<Endpoint> interface_addresses() {
  std::vector<Endpoint> out;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return out;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    const int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    Endpoint e;
    e.len = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&e.addr, i->ifa_addr, e.len);
    // IPv4 link-local (169.254/16, no DHCP) is left out; IPv6 link-local is
    // kept with its scope: a direct cable or a tethered phone may have no
    // other address (the sender pairs it with its own interfaces).
    if (e.is_link_local() && (fam == AF_INET || (i->ifa_flags & IFF_LOOPBACK))) continue;
    bool dup = false;
    for (const auto& o : out) dup = dup || o.host() == e.host();
    if (!dup) out.push_back(e);
  }
  freeifaddrs(ifs);
  return out;
}

Endpoint local_endpoint_of(int fd) {
  Endpoint e;
  e.len = sizeof e.addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&e.addr), &e.len) != 0) e.len = 0;
  return e;
}

Endpoint peer_endpoint_of(int fd) {
  Endpoint e;
  e.len = sizeof e.addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&e.addr), &e.len) != 0) e.len = 0;
  return e;
}

}  // namespace braid::lanes
