#include "engine/lanes/host_network.hpp"

#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine/security/unique_fd.h"

namespace braid::lanes {
namespace {

int prefix_len_of(const sockaddr* mask) {
  if (!mask) return 0;
  const uint8_t* b = nullptr;
  size_t n = 0;
  if (mask->sa_family == AF_INET) {
    b = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in*>(mask)->sin_addr);
    n = 4;
  } else if (mask->sa_family == AF_INET6) {
    b = reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr);
    n = 16;
  }
  int bits = 0;
  for (size_t i = 0; i < n; ++i) bits += __builtin_popcount(b[i]);
  return bits;
}

paths::IpBytes ip_of(bool v6, const void* data) {
  paths::IpBytes ip;
  ip.v6 = v6;
  std::memcpy(ip.b.data(), data, v6 ? 16 : 4);
  return ip;
}

}  // namespace

paths::IpBytes ip_bytes_of(const Endpoint& e) {
  if (e.family() == AF_INET6) return ip_of(true, &reinterpret_cast<const sockaddr_in6*>(&e.addr)->sin6_addr);
  return ip_of(false, &reinterpret_cast<const sockaddr_in*>(&e.addr)->sin_addr);
}

std::vector<paths::Interface> read_interfaces() {
  std::vector<paths::Interface> out;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) != 0) return out;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || !i->ifa_name) continue;
    const int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const paths::Interface& x) { return x.name == i->ifa_name; });
    if (it == out.end()) {
      paths::Interface n;
      n.name = i->ifa_name;
      n.index = if_nametoindex(i->ifa_name);
      n.up = (i->ifa_flags & IFF_UP) && (i->ifa_flags & IFF_RUNNING);
      n.loopback = i->ifa_flags & IFF_LOOPBACK;
      out.push_back(n);
      it = out.end() - 1;
    }
    Endpoint e;
    e.len = fam == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&e.addr, i->ifa_addr, e.len);
    it->addresses.push_back({ip_bytes_of(e), prefix_len_of(i->ifa_netmask), e.host()});
  }
  freeifaddrs(ifs);
  return out;
}

std::vector<paths::Route> read_routes(std::string& error) {
  std::vector<paths::Route> out;
  security::UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) {
    error = std::string("netlink: ") + std::strerror(errno);
    return out;
  }
  timeval tv{1, 0};  // the kernel answers at once; never hang a connect on it
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  uint32_t seq = 1;
  for (int family : {AF_INET, AF_INET6}) {
    struct {
      nlmsghdr h;
      rtmsg r;
    } req{};
    req.h.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
    req.h.nlmsg_type = RTM_GETROUTE;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.h.nlmsg_seq = ++seq;
    req.r.rtm_family = static_cast<unsigned char>(family);
    if (::send(fd.get(), &req, req.h.nlmsg_len, 0) < 0) {
      error = std::string("netlink: ") + std::strerror(errno);
      return {};
    }
    std::vector<char> buf(1 << 16);
    bool done = false;
    // A main table has a few routes per interface; bound the dump anyway.
    for (int reads = 0; !done && reads < 4096; ++reads) {
      const ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
      if (n <= 0) {
        error = std::string("netlink: ") + (n < 0 ? std::strerror(errno) : "closed");
        return {};
      }
      size_t left = static_cast<size_t>(n);
      for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
        if (h->nlmsg_seq != req.h.nlmsg_seq) continue;
        if (h->nlmsg_type == NLMSG_DONE) {
          done = true;
          break;
        }
        if (h->nlmsg_type == NLMSG_ERROR) {
          error = "netlink: the kernel refused the route dump";
          return {};
        }
        if (h->nlmsg_type != RTM_NEWROUTE) continue;
        const auto* r = static_cast<const rtmsg*>(NLMSG_DATA(h));
        if (r->rtm_type != RTN_UNICAST) continue;
        uint32_t table = r->rtm_table;
        paths::Route route;
        route.prefix_len = r->rtm_dst_len;
        route.destination.v6 = family == AF_INET6;
        bool has_oif = false;
        int alen = static_cast<int>(RTM_PAYLOAD(h));
        for (auto* a = RTM_RTA(r); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
          const size_t want = family == AF_INET6 ? 16 : 4;
          switch (a->rta_type) {
            case RTA_TABLE:
              if (RTA_PAYLOAD(a) >= 4) std::memcpy(&table, RTA_DATA(a), 4);
              break;
            case RTA_DST:
              if (RTA_PAYLOAD(a) >= want) route.destination = ip_of(family == AF_INET6, RTA_DATA(a));
              break;
            case RTA_GATEWAY:
              if (RTA_PAYLOAD(a) >= want) route.gateway = ip_of(family == AF_INET6, RTA_DATA(a));
              break;
            case RTA_OIF:
              if (RTA_PAYLOAD(a) >= 4) {
                std::memcpy(&route.interface, RTA_DATA(a), 4);
                has_oif = true;
              }
              break;
            case RTA_PRIORITY:
              if (RTA_PAYLOAD(a) >= 4) std::memcpy(&route.metric, RTA_DATA(a), 4);
              break;
            default:
              break;
          }
        }
        // Multipath routes (RTA_MULTIPATH) have no single RTA_OIF: left out.
        if (table == RT_TABLE_MAIN && has_oif) out.push_back(route);
      }
    }
  }
  return out;
}

security::UniqueFd open_network_watch(std::string& error) {
  security::UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE));
  if (!fd.valid()) {
    error = std::string("netlink: ") + std::strerror(errno);
    return fd;
  }
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  sa.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    error = std::string("netlink: ") + std::strerror(errno);
    return {};
  }
  return fd;
}

bool drain_network_watch(int fd) {
  bool changed = false;
  std::vector<char> buf(1 << 16);
  for (;;) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0 && errno == ENOBUFS) {  // the kernel dropped some: something changed
      changed = true;
      continue;
    }
    if (n <= 0) return changed;
    size_t left = static_cast<size_t>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left))
      changed = changed || h->nlmsg_type == RTM_NEWLINK || h->nlmsg_type == RTM_DELLINK ||
                h->nlmsg_type == RTM_NEWADDR || h->nlmsg_type == RTM_DELADDR || h->nlmsg_type == RTM_NEWROUTE ||
                h->nlmsg_type == RTM_DELROUTE;
  }
}

}  // namespace braid::lanes
