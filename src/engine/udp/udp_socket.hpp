// The socket layer of a UDP lane: one non-blocking UDP socket, bound to the
// lane's local address and connected to the peer, moving datagrams in
// batches with as few system calls as the kernel allows:
//
//   send: sendmmsg(2), and UDP GSO (UDP_SEGMENT, Linux ≥ 4.18) so one
//         message carries up to 64 equal-size datagrams (≤ ~64 KB) that the
//         kernel cuts apart as late as possible; without GSO, one message
//         per datagram — still one syscall per batch;
//   recv: recvmmsg(2), and UDP GRO (UDP_GRO, Linux ≥ 5.0) so one buffer may
//         hold several datagrams of one segment size, told by a cmsg.
//
// If the kernel refuses GSO at send time (EIO: no checksum offload on the
// route; EINVAL) the socket turns GSO off and resends the same batch without
// it: a graceful fall-back, counted in stats().
//
// An unconnected socket (a receiver's port shared by many lanes) sends each
// datagram to its own address: a batch slot may carry a destination, and
// GSO runs never cross destinations.
//
// Nothing here knows the protocol. The test hook (FaultInjection) drops
// datagrams at random (seeded) before they reach the kernel, shows each
// sent datagram to the test, so tests can lose, replay or forge packets,
// and can play a kernel that refuses GSO at send time.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/security/unique_fd.h"
#include "engine/udp/socket_address.hpp"

namespace braid::udp {

/// Largest UDP payload one GSO message may carry (IPv4: 65535 − 20 − 8,
/// rounded down to leave room for IP options and IPv6's header).
inline constexpr size_t kMaxGsoBytes = 65000;
/// Segments per GSO message (the kernel's UDP_MAX_SEGMENTS is 64 on older kernels).
inline constexpr size_t kMaxGsoSegments = 64;

struct SocketOptions {
  /// SO_SNDBUF / SO_RCVBUF; SO_*BUFFORCE is tried first, then the sysctl cap applies.
  int buffer_bytes = 8 << 20;
  bool gso = true;
  bool gro = true;
  /// The interface the datagrams must leave through (SO_BINDTODEVICE); empty: any.
  std::string device;
};

/// Test hook: seeded random drop of outgoing datagrams, and a look at each
/// datagram that went out (sealed bytes, as on the wire).
struct FaultInjection {
  double drop_probability = 0.0;
  uint64_t seed = 1;
  /// An errno (EIO, EINVAL) the "kernel" answers every send carrying a GSO
  /// message with, as a route without checksum offload does (0: none), so
  /// tests reach the fall-back to one datagram per message.
  int refuse_gso = 0;
  std::function<void(std::span<const uint8_t> datagram)> on_sent;
};

struct SocketStats {
  uint64_t datagrams_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t send_calls = 0;        // sendmmsg calls
  uint64_t gso_messages = 0;      // messages that carried more than one datagram
  uint64_t datagrams_received = 0;
  uint64_t bytes_received = 0;
  uint64_t recv_calls = 0;        // recvmmsg calls that returned data
  uint64_t gro_messages = 0;      // received buffers that held more than one datagram
  uint64_t injected_drops = 0;    // test hook
  uint64_t injected_drop_bytes = 0;
  uint64_t gso_fallbacks = 0;     // times the kernel refused GSO and it was turned off
};

/// Datagrams waiting to be sent: fixed slots in one buffer, allocated once.
class TxBatch {
 public:
  TxBatch(size_t slots, size_t slot_size);
  /// Where the next datagram goes (slot_size bytes); empty if the batch is full.
  std::span<uint8_t> next_slot();
  bool full() const { return count_ == lens_.size(); }
  bool empty() const { return head_ == count_; }
  size_t pending() const { return count_ - head_; }
  size_t slot_size() const { return slot_size_; }
  /// Forgets what is pending (datagrams the socket could not take).
  void discard() { count_ = head_ = 0; }
  /// The tag queue() gave the first pending datagram (who sent it).
  uint32_t head_owner() const { return owner_[head_]; }
  /// Drops the pending datagrams at the head with the head's tag (after a
  /// send error that concerns that destination only).
  void drop_head_owner();

 private:
  friend class UdpSocket;
  void commit(size_t len, const SocketAddress* to, uint32_t owner) {
    if (to) to_[count_] = *to; else to_[count_].len = 0;
    owner_[count_] = owner;
    lens_[count_++] = static_cast<uint32_t>(len);
  }
  uint8_t* slot(size_t i) { return buf_.get() + i * slot_size_; }
  // Not zeroed: each page is touched first by a datagram written to it, so
  // opening a socket faults no page in (zeroing this and RxBatch's buffer
  // was nine tenths of a receiver's time to open a UDP port: perf, netlab).
  std::unique_ptr<uint8_t[]> buf_;
  std::vector<uint32_t> lens_;
  std::vector<SocketAddress> to_;   // per slot; len 0: the connected peer
  std::vector<uint32_t> owner_;     // per slot: the caller's tag
  size_t slot_size_;
  size_t count_ = 0;  // slots filled
  size_t head_ = 0;   // slots already sent
};

/// Receive buffers for one recvmmsg call, allocated once.
class RxBatch {
 public:
  /// `messages` buffers of `buffer_size` bytes (64 KiB with GRO, else the packet size).
  RxBatch(size_t messages, size_t buffer_size);
  /// Calls f(std::span<uint8_t> datagram, const SocketAddress& from) for each
  /// datagram of the last receive, splitting GRO buffers into segments.
  template <class F>
  void for_each(F&& f);

 private:
  friend class UdpSocket;
  std::unique_ptr<uint8_t[]> buf_;  // not zeroed, as TxBatch's
  std::vector<uint8_t> control_;
  std::vector<mmsghdr> msgs_;
  std::vector<iovec> iov_;
  std::vector<sockaddr_storage> from_;
  std::vector<uint16_t> segment_;  // GRO segment size per message (0: one datagram)
  size_t buffer_size_;
  size_t received_ = 0;
};

class UdpSocket {
 public:
  /// A socket bound to `local` (port 0: any) and, if `remote` is set,
  /// connected to it. Error text names the address and errno.
  static std::unique_ptr<UdpSocket> open(const SocketAddress& local, const SocketAddress* remote,
                                         const SocketOptions& opts, std::string& error);

  int fd() const { return fd_.get(); }
  SocketAddress local_address() const;
  bool connected() const { return connected_; }
  /// The path MTU the kernel knows for the connected peer (IP_MTU /
  /// IPV6_MTU), or 0 if it cannot tell.
  size_t path_mtu() const;
  /// Connects an unconnected socket (a receiver that learnt its peer).
  bool connect(const SocketAddress& remote, std::string& error);
  bool gso() const { return gso_; }
  bool gro() const { return gro_; }

  /// Puts the datagram just written into batch.next_slot() (`len` bytes) in
  /// line to be sent; the fault hook may drop it here. `to`: its destination
  /// on an unconnected socket (nullptr: the connected peer); `owner`: a tag
  /// for the caller (TxBatch::head_owner after an error).
  void queue(TxBatch& batch, size_t len, const SocketAddress* to = nullptr, uint32_t owner = 0);
  /// Sends what is pending in `batch`. Returns 0 when all went (the batch is
  /// then empty and reset), EAGAIN when the socket buffer is full (the rest
  /// stays pending: wait for POLLOUT), or another errno (e.g. ECONNREFUSED,
  /// EMSGSIZE).
  int flush(TxBatch& batch);
  /// One datagram, outside any batch (test hook: forged or replayed packets;
  /// callable from any thread). Returns 0 or errno.
  int send_raw(std::span<const uint8_t> datagram);

  /// Receives what is waiting, without blocking. Returns the number of
  /// buffers filled (0: nothing) or −errno.
  int receive(RxBatch& batch);

  void set_fault_injection(FaultInjection f);
  const SocketStats& stats() const { return stats_; }

 private:
  UdpSocket() = default;
  int send_messages(TxBatch& batch, bool use_gso);

  security::UniqueFd fd_;
  // Set by connect() on the caller's thread while the I/O thread may already
  // be reading it in receive().
  std::atomic<bool> connected_{false};
  bool gso_ = false;
  bool gro_ = false;
  SocketStats stats_;
  FaultInjection fault_;
  std::mt19937_64 rng_;
  // Scratch for sendmmsg, sized once.
  std::vector<mmsghdr> tx_msgs_;
  std::vector<iovec> tx_iov_;
  std::vector<uint8_t> tx_control_;
  std::vector<uint32_t> tx_count_;  // datagrams in each message
};

// --- template implementation ------------------------------------------------

template <class F>
void RxBatch::for_each(F&& f) {
  for (size_t m = 0; m < received_; ++m) {
    const size_t total = msgs_[m].msg_len;
    uint8_t* base = buf_.get() + m * buffer_size_;
    const SocketAddress from =
        SocketAddress::from(reinterpret_cast<const sockaddr*>(&from_[m]), msgs_[m].msg_hdr.msg_namelen);
    const size_t seg = segment_[m] ? segment_[m] : total;
    for (size_t at = 0; at < total; at += seg) f(std::span<uint8_t>(base + at, std::min(seg, total - at)), from);
  }
}

}  // namespace braid::udp
