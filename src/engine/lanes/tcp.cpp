#include "engine/lanes/tcp.hpp"

#include <fstream>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace braid::lanes {

bool bind_to_device(int fd, const std::string& device) {
  return ::setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, device.c_str(), static_cast<socklen_t>(device.size())) == 0;
}

security::UniqueFd connect_tcp(const Endpoint& remote, const Endpoint* local, int timeout_ms, std::string& error,
                               int& err, const std::string& device) {
  security::UniqueFd fd(::socket(remote.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  auto fail = [&](const std::string& what) {
    err = errno;
    error = what + ": " + std::strerror(err);
    return security::UniqueFd();
  };
  if (!fd.valid()) return fail("socket");
  if (!device.empty() && !bind_to_device(fd.get(), device)) return fail("cannot bind to interface " + device);
  if (local) {
    Endpoint l = *local;
    l.set_port(0);
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&l.addr), l.len) != 0)
      return fail("cannot bind to " + l.host());
  }
  tune_lane_socket(fd.get());
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&remote.addr), remote.len) != 0) {
    if (errno != EINPROGRESS) return fail("cannot connect to " + remote.str());
    pollfd p{fd.get(), POLLOUT, 0};
    int rc = ::poll(&p, 1, timeout_ms);
    if (rc == 0) {
      errno = ETIMEDOUT;
      return fail("cannot connect to " + remote.str());
    }
    int so = 0;
    socklen_t sl = sizeof so;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so, &sl);
    if (rc < 0 || so != 0) {
      errno = rc < 0 ? errno : so;
      return fail("cannot connect to " + remote.str());
    }
  }
  // Blocking from here on: each lane has its own threads.
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  err = 0;
  return fd;
}

// Connections the kernel holds until the receiver's accept loop takes them.
// A burst (a sender's lanes, many senders, a flood) beyond it has its SYNs
// dropped, and each such connect waits a 1 s SYN retransmission — longer
// than a lane's whole budget on a fast path. The kernel caps it at somaxconn.
constexpr int kListenBacklog = 4096;

security::UniqueFd listen_tcp(const Endpoint& where, std::string& error) {
  security::UniqueFd fd(::socket(where.family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    error = std::string("socket: ") + std::strerror(errno);
    return {};
  }
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (where.family() == AF_INET6) {
    int v6only = where.is_wildcard() ? 0 : 1;
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&where.addr), where.len) != 0 || ::listen(fd.get(), kListenBacklog) != 0) {
    error = "cannot listen on " + where.str() + ": " + std::strerror(errno);
    return {};
  }
  return fd;
}

void tune_lane_socket(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  set_notsent_lowat(fd, kNotSentLowat);
  // A lane whose peer vanished (a cable pulled, a host gone, a NAT that
  // forgot us) errors out in about 15 s instead of hanging:
  //  - idle, keepalive probes start after 5 s of silence, 3 probes 2 s apart
  //    (a lane is idle only between transfers: acks flow while data does);
  //  - with data unacknowledged, TCP_USER_TIMEOUT ends the connection after
  //    15 s without one ack. A slow but alive lane is not killed by it: acks
  //    come every RTT, and a whole 1 MiB chunk queued on a 1.5 Mbit/s link
  //    (5.6 s, the seed's Bluetooth) still sees acks all along; 15 s covers
  //    ~6 back-to-back retransmission timeouts (200 ms doubling) of a lossy one.
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  int idle = 5, intvl = 2, cnt = 3;
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
  unsigned user_timeout_ms = 15'000;
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

// Sockets take send() (no SIGPIPE); what is not a socket (braid relay's
// stdout: a pipe or a pty) takes write(). A lane over a pty or pipe does its
// own polled I/O (LaneLink), so recv_all is for sockets only.
bool send_all(int fd, const uint8_t* data, size_t len, int& err) {
  bool socket = true;
  while (len > 0) {
    ssize_t n = socket ? ::send(fd, data, len, MSG_NOSIGNAL) : ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOTSOCK && socket) {
        socket = false;
        continue;
      }
      err = errno;
      return false;
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool recv_all(int fd, uint8_t* data, size_t len, int& err, bool ack_each_read) {
  while (len > 0) {
    ssize_t n = ::recv(fd, data, len, ack_each_read ? 0 : MSG_WAITALL);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      return false;
    }
    if (n == 0) {
      err = 0;
      return false;
    }
    if (ack_each_read) {
      // Linux ACKs every second full segment at once. Once the receiver
      // also talks on the connection (braid's acknowledges pieces: the
      // kernel's interactive mode), it holds the ACK of a lone one until
      // the next arrives (or its delayed-ACK timer, 40 ms), even after the
      // data is read. A paced sender sends pairs; once a single segment has
      // put the count out of step, every pair's second segment waits for the next pair:
      // a pacing gap (10 ms at 2.3 Mbit/s) in every RTT sample of that
      // lane, which the sender's delay-based cap read as queue, and the
      // lower rate it chose made the gap longer (netlab uplink10: three
      // lanes fell from 9.5 to 4 Mbit/s with 2 ms of real queue; seen with
      // `netlab up --trace`). TCP_QUICKACK after a read sends an ACK the
      // kernel holds, now that the data is read; it is not sticky, so once
      // per read (a read returns as data arrives: no MSG_WAITALL).
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool set_max_pacing_rate(int fd, Rate rate) {
  // The kernel takes an unsigned long (bytes per second) since 4.20, a u32 before.
  unsigned long v = static_cast<unsigned long>(std::max(1.0, rate.bytes_per_second()));
  if (::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &v, sizeof v) == 0) return true;
  uint32_t v32 = static_cast<uint32_t>(std::min<unsigned long>(v, UINT32_MAX - 1));
  return ::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &v32, sizeof v32) == 0;
}

int notsent_lowat_for(std::optional<Rate> cap) {
  if (!cap) return kNotSentLowat;
  const double want = cap->bytes_per_second() * kNotSentSecondsCapped;
  return static_cast<int>(std::clamp(want, double{kNotSentLowatFloor}, double{kNotSentLowat}));
}

bool set_notsent_lowat(int fd, int bytes) {
  return ::setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &bytes, sizeof bytes) == 0;
}

bool set_congestion_control(int fd, const std::string& name) {
  return ::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) == 0;
}

bool clear_max_pacing_rate(int fd) {
  unsigned long none = ~0UL;
  if (::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &none, sizeof none) == 0) return true;
  uint32_t none32 = ~0U;
  return ::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &none32, sizeof none32) == 0;
}

std::string congestion_control_of(int fd) {
  char name[32] = {};
  socklen_t len = sizeof name;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return {};
  return std::string(name, strnlen(name, std::min<size_t>(len, sizeof name)));
}

bool restart_congestion_control(int fd) {
  const std::string current = congestion_control_of(fd);
  if (current.empty()) return false;
  // reno is always built in; a socket already on reno goes through cubic.
  const std::string other = current == "reno" ? "cubic" : "reno";
  return set_congestion_control(fd, other) && set_congestion_control(fd, current);
}

std::vector<std::string> kernel_congestion_controls() {
  std::vector<std::string> out;
  std::ifstream in("/proc/sys/net/ipv4/tcp_available_congestion_control");
  for (std::string name; in >> name;) out.push_back(name);
  return out;
}

bool tcp_path_info(int fd, uint32_t& rtt_us, uint32_t& retransmits) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  rtt_us = info.tcpi_rtt;
  retransmits = info.tcpi_total_retrans;
  return true;
}

}  // namespace braid::lanes
