#include "engine/discovery/mdns_net.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

namespace braid::discovery {
namespace {

constexpr const char* kGroup4 = "224.0.0.251";
constexpr const char* kGroup6 = "ff02::fb";

unsigned prefix_of(const sockaddr* mask) {
  if (!mask) return 0;
  unsigned n = 0;
  const auto* b = mask->sa_family == AF_INET
                      ? reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(mask)->sin_addr)
                      : reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr);
  const size_t len = mask->sa_family == AF_INET ? 4 : 16;
  for (size_t i = 0; i < len; ++i) n += static_cast<unsigned>(std::popcount(b[i]));
  return n;
}

IpAddress from_sockaddr(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    std::array<uint8_t, 4> b{};
    std::memcpy(b.data(), &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
    return IpAddress::v4(b);
  }
  std::array<uint8_t, 16> b{};
  std::memcpy(b.data(), &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
  return IpAddress::v6_of(b);
}

bool same_prefix(const IpAddress& a, const IpAddress& b, unsigned prefix) {
  if (a.v6 != b.v6) return false;
  for (unsigned i = 0; i < prefix / 8; ++i)
    if (a.bytes[i] != b.bytes[i]) return false;
  if (prefix % 8 == 0) return true;
  const uint8_t m = static_cast<uint8_t>(0xFF << (8 - prefix % 8));
  return (a.bytes[prefix / 8] & m) == (b.bytes[prefix / 8] & m);
}

bool has_family(const NetInterface& n, bool v6) {
  return std::any_of(n.addresses.begin(), n.addresses.end(), [&](const auto& a) { return a.address.v6 == v6; });
}

void set_int(int fd, int level, int name, int v) { ::setsockopt(fd, level, name, &v, sizeof v); }

security::UniqueFd open_socket(bool v6, std::string& error) {
  security::UniqueFd fd(::socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) {
    error = std::string("socket: ") + std::strerror(errno);
    return {};
  }
  set_int(fd.get(), SOL_SOCKET, SO_REUSEADDR, 1);
  set_int(fd.get(), SOL_SOCKET, SO_REUSEPORT, 1);
  sockaddr_storage ss{};
  socklen_t len;
  if (v6) {
    set_int(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, 1);
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(kMdnsPort);
    a->sin6_addr = in6addr_any;
    len = sizeof *a;
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(kMdnsPort);
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    len = sizeof *a;
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0) {
    error = std::string("cannot bind UDP port 5353 (") + (v6 ? "IPv6" : "IPv4") + "): " + std::strerror(errno);
    return {};
  }
  if (v6) {
    set_int(fd.get(), IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
    set_int(fd.get(), IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1);
    set_int(fd.get(), IPPROTO_IPV6, IPV6_MULTICAST_HOPS, 255);
    set_int(fd.get(), IPPROTO_IPV6, IPV6_UNICAST_HOPS, 255);
    set_int(fd.get(), IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 1);  // a browser on this host hears us
  } else {
    set_int(fd.get(), IPPROTO_IP, IP_PKTINFO, 1);
    set_int(fd.get(), IPPROTO_IP, IP_RECVTTL, 1);
    set_int(fd.get(), IPPROTO_IP, IP_MULTICAST_TTL, 255);
    set_int(fd.get(), IPPROTO_IP, IP_TTL, 255);
    set_int(fd.get(), IPPROTO_IP, IP_MULTICAST_LOOP, 1);
  }
  return fd;
}

}  // namespace

std::vector<NetInterface> multicast_interfaces() {
  std::vector<NetInterface> out;
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) != 0) return out;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || !i->ifa_name) continue;
    if (!(i->ifa_flags & IFF_UP) || !(i->ifa_flags & IFF_MULTICAST) || (i->ifa_flags & IFF_LOOPBACK)) continue;
    const int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    const uint32_t index = ::if_nametoindex(i->ifa_name);
    if (index == 0) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const NetInterface& n) { return n.index == index; });
    if (it == out.end()) {
      out.push_back({index, i->ifa_name, {}});
      it = out.end() - 1;
    }
    it->addresses.push_back({from_sockaddr(i->ifa_addr), prefix_of(i->ifa_netmask)});
  }
  ::freeifaddrs(ifs);
  return out;
}

Time steady_now() {
  return Time::from_ns(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::optional<MdnsSockets> MdnsSockets::open(const std::vector<NetInterface>& interfaces, std::string& error,
                                             bool need_link) {
  MdnsSockets s;
  for (bool v6 : {false, true}) {
    std::string why;
    auto fd = open_socket(v6, why);
    if (!fd.valid()) {
      if (std::any_of(interfaces.begin(), interfaces.end(), [&](const NetInterface& n) { return has_family(n, v6); }))
        s.notes_.push_back(why);
      continue;
    }
    (v6 ? s.v6_ : s.v4_) = std::move(fd);
  }
  s.refresh(interfaces);
  if (!s.v4_.valid() && !s.v6_.valid()) {
    error = s.notes_.empty() ? "no UDP socket for mDNS" : s.notes_.front();
    return std::nullopt;
  }
  if (s.links_.empty() && need_link) {
    error = interfaces.empty() ? "no multicast-capable network interface is up"
                               : "could not join mDNS on any interface" +
                                     (s.notes_.empty() ? std::string() : " (" + s.notes_.front() + ")");
    return std::nullopt;
  }
  return s;
}

bool MdnsSockets::refresh(const std::vector<NetInterface>& interfaces) {
  std::vector<Link> now;
  for (bool v6 : {false, true}) {
    const int fd = v6 ? v6_.get() : v4_.get();
    if (fd < 0) continue;
    for (const auto& n : interfaces) {
      if (!has_family(n, v6)) continue;
      const Link link{n.index, v6};
      if (std::find(links_.begin(), links_.end(), link) != links_.end()) {
        now.push_back(link);
        continue;
      }
      int rc;
      if (v6) {
        ipv6_mreq m{};
        ::inet_pton(AF_INET6, kGroup6, &m.ipv6mr_multiaddr);
        m.ipv6mr_interface = n.index;
        rc = ::setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof m);
      } else {
        ip_mreqn m{};
        ::inet_pton(AF_INET, kGroup4, &m.imr_multiaddr);
        m.imr_ifindex = static_cast<int>(n.index);
        rc = ::setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m);
      }
      // EADDRINUSE: already joined there (an interface that went down and came back).
      if (rc != 0 && errno != EADDRINUSE) {
        notes_.push_back("cannot join the mDNS group on " + n.name + ": " + std::strerror(errno));
        continue;
      }
      now.push_back(link);
    }
  }
  // A link whose interface is gone is dropped; the kernel left the group with it.
  const bool changed = now != links_;
  links_ = std::move(now);
  interfaces_ = interfaces;
  return changed;
}

void MdnsSockets::send(const Transmit& t) {
  const int fd = t.link.v6 ? v6_.get() : v4_.get();
  if (fd < 0) return;
  sockaddr_storage ss{};
  socklen_t len;
  if (t.link.v6) {
    const int idx = static_cast<int>(t.link.interface);
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, sizeof idx);
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(t.unicast_to ? t.unicast_to->port : kMdnsPort);
    if (t.unicast_to)
      std::memcpy(&a->sin6_addr, t.unicast_to->address.bytes.data(), 16);
    else
      ::inet_pton(AF_INET6, kGroup6, &a->sin6_addr);
    a->sin6_scope_id = t.link.interface;
    len = sizeof *a;
  } else {
    ip_mreqn m{};
    m.imr_ifindex = static_cast<int>(t.link.interface);
    ::setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof m);
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    a->sin_family = AF_INET;
    a->sin_port = htons(t.unicast_to ? t.unicast_to->port : kMdnsPort);
    if (t.unicast_to)
      std::memcpy(&a->sin_addr, t.unicast_to->address.bytes.data(), 4);
    else
      ::inet_pton(AF_INET, kGroup4, &a->sin_addr);
    len = sizeof *a;
  }
  // Best effort, like every mDNS packet: a full buffer or a vanished
  // interface loses this one; the protocol repeats itself.
  (void)::sendto(fd, t.bytes.data(), t.bytes.size(), 0, reinterpret_cast<sockaddr*>(&ss), len);
}

bool MdnsSockets::on_link(const IpAddress& from, uint32_t interface) const {
  if (from.is_link_local()) return true;
  for (const auto& n : interfaces_)
    if (n.index == interface)
      for (const auto& a : n.addresses)
        if (same_prefix(a.address, from, a.prefix)) return true;
  return false;
}

void MdnsSockets::read_all(int fd, bool v6,
                           const std::function<void(std::span<const uint8_t>, const PeerAddress&, const Link&)>& on_packet) {
  // At most 64 datagrams per wake: a flood cannot starve the timers.
  for (int n = 0; n < 64; ++n) {
    uint8_t buf[kMaxPacket + 1];
    sockaddr_storage from{};
    alignas(cmsghdr) char control[256];
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t got = ::recvmsg(fd, &msg, 0);
    if (got < 0) return;  // EAGAIN: drained
    if (msg.msg_flags & MSG_TRUNC) continue;  // over 9000 bytes: not mDNS (RFC 6762 17)
    uint32_t ifindex = 0;
    int ttl = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (!v6 && c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
        in_pktinfo pi;
        std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
        ifindex = static_cast<uint32_t>(pi.ipi_ifindex);
      } else if (!v6 && c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
        std::memcpy(&ttl, CMSG_DATA(c), sizeof ttl);
      } else if (v6 && c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
        in6_pktinfo pi;
        std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
        ifindex = pi.ipi6_ifindex;
      } else if (v6 && c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT) {
        std::memcpy(&ttl, CMSG_DATA(c), sizeof ttl);
      }
    }
    const Link link{ifindex, v6};
    if (std::find(links_.begin(), links_.end(), link) == links_.end()) continue;  // not a link we joined
    PeerAddress peer;
    peer.address = from_sockaddr(reinterpret_cast<sockaddr*>(&from));
    peer.port = ntohs(v6 ? reinterpret_cast<sockaddr_in6*>(&from)->sin6_port : reinterpret_cast<sockaddr_in*>(&from)->sin_port);
    // TTL 255 can only come from this link (a router would have lowered it);
    // anything less only from an on-link address (RFC 6762 11).
    if (ttl != 255 && !on_link(peer.address, ifindex)) {
      ++off_link_;
      continue;
    }
    on_packet(std::span<const uint8_t>(buf, static_cast<size_t>(got)), peer, link);
  }
}

bool MdnsSockets::wait(std::chrono::steady_clock::time_point deadline, int wake_fd,
                       const std::function<void(std::span<const uint8_t>, const PeerAddress&, const Link&)>& on_packet) {
  pollfd fds[3];
  nfds_t n = 0;
  if (v4_.valid()) fds[n++] = {v4_.get(), POLLIN, 0};
  if (v6_.valid()) fds[n++] = {v6_.get(), POLLIN, 0};
  const nfds_t wake_at = n;
  if (wake_fd >= 0) fds[n++] = {wake_fd, POLLIN, 0};
  const auto left = deadline - std::chrono::steady_clock::now();
  const int ms = static_cast<int>(std::clamp<int64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1, 0, 1000));
  const int rc = ::poll(fds, n, ms);
  if (rc <= 0) return true;
  for (nfds_t i = 0; i < wake_at; ++i)
    if (fds[i].revents & POLLIN) read_all(fds[i].fd, fds[i].fd == v6_.get(), on_packet);
  return !(wake_fd >= 0 && (fds[wake_at].revents & POLLIN));
}

}  // namespace braid::discovery
