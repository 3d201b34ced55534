#include "engine/udp/udp_socket.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace braid::udp {

namespace {

constexpr size_t kSegmentCmsgSpace = CMSG_SPACE(sizeof(uint16_t));
constexpr size_t kGroCmsgSpace = CMSG_SPACE(sizeof(int));

std::string errno_text(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

void set_buffer(int fd, int force_opt, int opt, int bytes) {
  // FORCE ignores net.core.[rw]mem_max but needs CAP_NET_ADMIN; without it the
  // kernel silently caps the plain option at the sysctl value.
  if (::setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof bytes) != 0)
    (void)::setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
}

}  // namespace

// --- batches ------------------------------------------------------------------

TxBatch::TxBatch(size_t slots, size_t slot_size)
    : buf_(new uint8_t[slots * slot_size]), lens_(slots), to_(slots), owner_(slots), slot_size_(slot_size) {}

void TxBatch::drop_head_owner() {
  const uint32_t owner = owner_[head_];
  while (head_ < count_ && owner_[head_] == owner) ++head_;
  if (head_ == count_) count_ = head_ = 0;
}

std::span<uint8_t> TxBatch::next_slot() {
  if (full()) return {};
  return {slot(count_), slot_size_};
}

RxBatch::RxBatch(size_t messages, size_t buffer_size)
    : buf_(new uint8_t[messages * buffer_size]),
      control_(messages * kGroCmsgSpace),
      msgs_(messages),
      iov_(messages),
      from_(messages),
      segment_(messages),
      buffer_size_(buffer_size) {
  for (size_t i = 0; i < messages; ++i) {
    iov_[i] = iovec{buf_.get() + i * buffer_size, buffer_size};
    msghdr& h = msgs_[i].msg_hdr;
    h.msg_iov = &iov_[i];
    h.msg_iovlen = 1;
  }
}

// --- socket -------------------------------------------------------------------

std::unique_ptr<UdpSocket> UdpSocket::open(const SocketAddress& local, const SocketAddress* remote,
                                           const SocketOptions& opts, std::string& error) {
  std::unique_ptr<UdpSocket> s(new UdpSocket());
  s->fd_.reset(::socket(local.family(), SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP));
  if (!s->fd_.valid()) {
    error = errno_text("cannot create a UDP socket", errno);
    return nullptr;
  }
  const int fd = s->fd_.get();
  set_buffer(fd, SO_SNDBUFFORCE, SO_SNDBUF, opts.buffer_bytes);
  set_buffer(fd, SO_RCVBUFFORCE, SO_RCVBUF, opts.buffer_bytes);
  // Never let the kernel fragment a datagram: a packet size above the path
  // MTU fails loudly (EMSGSIZE) instead of losing whole datagrams to one lost fragment.
  if (local.family() == AF_INET) {
    int pmtu = IP_PMTUDISC_DO;
    (void)::setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
  } else {
    int pmtu = IPV6_PMTUDISC_DO;
    (void)::setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof pmtu);
  }
  if (opts.gso) {
    // Probe: setting a socket-wide segment size of 0 succeeds only where the
    // kernel knows UDP_SEGMENT. The size itself goes per message, in a cmsg.
    int zero = 0;
    s->gso_ = ::setsockopt(fd, SOL_UDP, UDP_SEGMENT, &zero, sizeof zero) == 0;
  }
  if (opts.gro) {
    int one = 1;
    s->gro_ = ::setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0;
  }
  if (!opts.device.empty() &&
      ::setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, opts.device.c_str(), static_cast<socklen_t>(opts.device.size())) != 0) {
    error = errno_text(("cannot bind UDP to interface " + opts.device).c_str(), errno);
    return nullptr;
  }
  if (::bind(fd, local.sa(), local.len) != 0) {
    error = errno_text(("cannot bind UDP " + local.str()).c_str(), errno);
    return nullptr;
  }
  if (remote && !s->connect(*remote, error)) return nullptr;
  return s;
}

size_t UdpSocket::path_mtu() const {
  if (!connected_) return 0;
  int mtu = 0;
  socklen_t len = sizeof mtu;
  const bool v4 = local_address().family() == AF_INET;
  if (::getsockopt(fd_.get(), v4 ? IPPROTO_IP : IPPROTO_IPV6, v4 ? IP_MTU : IPV6_MTU, &mtu, &len) != 0 || mtu <= 0)
    return 0;
  return static_cast<size_t>(mtu);
}

bool UdpSocket::connect(const SocketAddress& remote, std::string& error) {
  if (::connect(fd_.get(), remote.sa(), remote.len) != 0) {
    error = errno_text(("cannot connect UDP to " + remote.str()).c_str(), errno);
    return false;
  }
  connected_ = true;
  return true;
}

SocketAddress UdpSocket::local_address() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  return SocketAddress::from(reinterpret_cast<const sockaddr*>(&ss), len);
}

void UdpSocket::set_fault_injection(FaultInjection f) {
  fault_ = std::move(f);
  rng_.seed(fault_.seed);
}

void UdpSocket::queue(TxBatch& batch, size_t len, const SocketAddress* to, uint32_t owner) {
  if (fault_.drop_probability > 0 &&
      std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < fault_.drop_probability) {
    ++stats_.injected_drops;
    stats_.injected_drop_bytes += len;
    return;  // the slot is reused by the next datagram
  }
  if (fault_.on_sent) fault_.on_sent(std::span<const uint8_t>(batch.slot(batch.count_), len));
  batch.commit(len, to, owner);
}

int UdpSocket::flush(TxBatch& batch) {
  while (!batch.empty()) {
    const int rc = send_messages(batch, gso_);
    if (rc == 0) continue;
    if (gso_ && (rc == EIO || rc == EINVAL)) {
      // The route cannot segment (no checksum offload) or refuses the size:
      // carry on without GSO rather than failing the lane.
      gso_ = false;
      ++stats_.gso_fallbacks;
      continue;
    }
    return rc;
  }
  batch.count_ = batch.head_ = 0;
  return 0;
}

int UdpSocket::send_messages(TxBatch& batch, bool use_gso) {
  const size_t n = batch.count_;
  if (tx_iov_.size() < n) tx_iov_.resize(n);
  if (tx_msgs_.size() < n) {
    tx_msgs_.resize(n);
    tx_count_.resize(n);
    tx_control_.resize(n * kSegmentCmsgSpace);
  }
  // Group datagrams into messages: with GSO, a run of equal sizes (the last
  // may be shorter), up to the kernel's segment and byte limits.
  size_t messages = 0;
  for (size_t i = batch.head_; i < n;) {
    const size_t seg = batch.lens_[i];
    size_t j = i, bytes = 0;
    while (j < n && (j == i || use_gso)) {
      const size_t len = batch.lens_[j];
      if (j > i && (len > seg || j - i == kMaxGsoSegments || bytes + len > kMaxGsoBytes)) break;
      if (j > i && batch.to_[i].len != 0 && !(batch.to_[j] == batch.to_[i])) break;  // one destination per message
      tx_iov_[j] = iovec{batch.slot(j), len};
      bytes += len;
      ++j;
      if (len < seg) break;  // a shorter datagram ends the run
    }
    mmsghdr& m = tx_msgs_[messages];
    m = mmsghdr{};
    m.msg_hdr.msg_iov = &tx_iov_[i];
    m.msg_hdr.msg_iovlen = j - i;
    if (batch.to_[i].len != 0) {
      m.msg_hdr.msg_name = &batch.to_[i].storage;
      m.msg_hdr.msg_namelen = batch.to_[i].len;
    }
    if (j - i > 1) {
      uint8_t* ctl = tx_control_.data() + messages * kSegmentCmsgSpace;
      std::memset(ctl, 0, kSegmentCmsgSpace);
      m.msg_hdr.msg_control = ctl;
      m.msg_hdr.msg_controllen = kSegmentCmsgSpace;
      cmsghdr* c = CMSG_FIRSTHDR(&m.msg_hdr);
      c->cmsg_level = SOL_UDP;
      c->cmsg_type = UDP_SEGMENT;
      c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
      const auto gso_size = static_cast<uint16_t>(seg);
      std::memcpy(CMSG_DATA(c), &gso_size, sizeof gso_size);
    }
    tx_count_[messages] = static_cast<uint32_t>(j - i);
    ++messages;
    i = j;
  }
  if (fault_.refuse_gso != 0 && messages < n - batch.head_) return fault_.refuse_gso;  // some message carries several
  const int sent = ::sendmmsg(fd_.get(), tx_msgs_.data(), static_cast<unsigned>(messages), 0);
  if (sent < 0) return errno == EWOULDBLOCK ? EAGAIN : errno;
  ++stats_.send_calls;
  for (int m = 0; m < sent; ++m) {
    const uint32_t k = tx_count_[static_cast<size_t>(m)];
    for (uint32_t d = 0; d < k; ++d) stats_.bytes_sent += batch.lens_[batch.head_ + d];
    stats_.datagrams_sent += k;
    stats_.gso_messages += k > 1;
    batch.head_ += k;
  }
  return 0;
}

int UdpSocket::send_raw(std::span<const uint8_t> datagram) {
  if (::send(fd_.get(), datagram.data(), datagram.size(), 0) < 0) return errno;
  return 0;
}

int UdpSocket::receive(RxBatch& batch) {
  const size_t n = batch.msgs_.size();
  for (size_t i = 0; i < n; ++i) {
    msghdr& h = batch.msgs_[i].msg_hdr;
    h.msg_name = &batch.from_[i];
    h.msg_namelen = sizeof(sockaddr_storage);
    h.msg_control = batch.control_.data() + i * kGroCmsgSpace;
    h.msg_controllen = kGroCmsgSpace;
    h.msg_flags = 0;
  }
  batch.received_ = 0;
  const int got = ::recvmmsg(fd_.get(), batch.msgs_.data(), static_cast<unsigned>(n), MSG_DONTWAIT, nullptr);
  if (got < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
  ++stats_.recv_calls;
  for (int i = 0; i < got; ++i) {
    mmsghdr& m = batch.msgs_[static_cast<size_t>(i)];
    uint16_t seg = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m.msg_hdr); c; c = CMSG_NXTHDR(&m.msg_hdr, c)) {
      if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
        int v = 0;
        std::memcpy(&v, CMSG_DATA(c), sizeof v);
        seg = static_cast<uint16_t>(v);
      }
    }
    if (m.msg_hdr.msg_flags & MSG_TRUNC) m.msg_len = 0;  // too big for the buffer: not ours
    batch.segment_[static_cast<size_t>(i)] = seg;
    const size_t datagrams = seg ? (m.msg_len + seg - 1) / seg : (m.msg_len > 0);
    stats_.datagrams_received += datagrams;
    stats_.gro_messages += datagrams > 1;
    stats_.bytes_received += m.msg_len;
  }
  batch.received_ = static_cast<size_t>(got);
  return got;
}

}  // namespace braid::udp
