// A socket address (IPv4 or IPv6) as the UDP lane takes it, with the one
// text form braid uses: "127.0.0.1:7878" or "[::1]:7878". Kept here (not the
// TCP engine's lanes::Endpoint) so the UDP lane builds on its own; both hold
// a sockaddr_storage, so the engine converts by copying.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace braid::udp {

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t len = 0;

  /// Numeric "A.B.C.D:PORT" or "[V6]:PORT" (port 0 = any).
  static std::optional<SocketAddress> parse(std::string_view text);
  static SocketAddress from(const sockaddr* sa, socklen_t len);

  int family() const { return storage.ss_family; }
  uint16_t port() const;
  void set_port(uint16_t port);
  bool valid() const { return len != 0; }
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage); }
  std::string str() const;
  bool operator==(const SocketAddress& o) const;
};

}  // namespace braid::udp
