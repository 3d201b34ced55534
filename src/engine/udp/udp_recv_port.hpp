// A receiver's UDP port: one socket, bound to one local address, shared by
// every receiving UDP lane on that address — the lanes of all sessions — and
// one I/O thread that demultiplexes what arrives, drives each lane's core
// (transport::LaneReceiver) and sends the lanes' feedback. `braid recv`
// binds it to the port its TCP listener has, so one port number (TCP and
// UDP) is all a firewall must let in (issue 5: "recv accepts both kinds on
// its port(s)").
//
// Demultiplexing. A datagram's clear header carries its kind and lane id
// (core/transport/wire.hpp); the session id is never on the wire, only in
// the AAD, so two sessions may both have a lane 3 here. A lane listens to
// one peer address, the source of the first datagram that authenticated
// with its keys (as a connected socket would); each datagram goes to
//   1. the lane with its lane id that listens to its source, else
//   2. the lanes with its lane id that have no peer yet, tried in turn
//      (normally one; with several each try opens a copy, since a failed
//      tag check leaves the buffer half decrypted); the first that
//      authenticates it takes its source as its peer, else
//   3. nobody: dropped and counted (UdpPortStats).
// A dropped datagram creates no state and is never answered: feedback only
// ever goes to a lane's authenticated peer (no amplification). Checking the
// header and finding the lane cost a few comparisons; the tag check (one
// AES-GCM pass) only happens for a lane id that is live here.
//
// An "exclusive" port holds one lane (UdpRecvLane::start without a shared
// port: tests, benchmarks, the fall-back when the listener's port number is
// taken). Its socket connects to the lane's peer, so the kernel filters
// other sources and an ICMP error (the peer's port closed) ends the lane.
//
// Threads: lanes attach and close from any thread (under a mutex, then an
// eventfd wake); everything else, including every lane event, runs on the
// port's I/O thread. A lane's handle keeps its port alive; the port's
// destructor joins its thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/udp/io_waiter.hpp"
#include "engine/udp/socket_address.hpp"
#include "engine/udp/udp_socket.hpp"

namespace braid::udp {

class UdpRecvLane;

/// Datagrams the port dropped before any lane's opener saw them.
struct UdpPortStats {
  uint64_t malformed = 0;       // too short for a header and tag, or not a braid data packet
  uint64_t unknown_lane = 0;    // no lane with that id on this port
  uint64_t foreign_source = 0;  // the lane id's lanes all listen to other peers
  /// Offered to the lanes of its id that wait for their peer; none
  /// authenticated it (with one such lane, its opener counts why too).
  uint64_t unauthenticated = 0;
  /// Not drops: a claimed lane's newest authentic datagram came from a new
  /// source, and the lane followed it (NAT rebinding, a changed route).
  uint64_t migrated = 0;
  uint64_t dropped() const { return malformed + unknown_lane + foreign_source + unauthenticated; }
};

class UdpRecvPort {
 public:
  /// A port bound to `local` (port 0: any free port). `exclusive`: for one
  /// lane, whose peer the socket then connects to; `fault`: the test hook
  /// on what the port sends. Null with `error` naming the address and errno
  /// (e.g. EADDRINUSE) on failure.
  static std::shared_ptr<UdpRecvPort> open(const SocketAddress& local, const SocketOptions& opts, std::string& error,
                                           bool exclusive = false, FaultInjection fault = {});
  ~UdpRecvPort();
  UdpRecvPort(const UdpRecvPort&) = delete;
  UdpRecvPort& operator=(const UdpRecvPort&) = delete;

  SocketAddress local_address() const { return local_; }
  bool exclusive() const { return exclusive_; }
  /// A snapshot, any thread.
  UdpPortStats stats() const;

 private:
  friend class UdpRecvLane;
  UdpRecvPort() = default;
  /// Any thread: the lane joins at the next turn of the I/O loop.
  void attach(UdpRecvLane* lane);
  void wake() { waiter_.wake(); }
  const SocketStats& socket_stats() const { return socket_->stats(); }  // I/O thread
  bool gso() const { return socket_->gso(); }
  bool gro() const { return socket_->gro(); }

  void run();
  void take_new_lanes();
  void receive(Time now);
  void dispatch(Time now, std::span<uint8_t> datagram, const SocketAddress& from);
  /// Datagram `d` for lane `id` from a source none of its lanes listens to:
  /// one of them takes it if it authenticates there, and moves to that
  /// source if it is the newest it has seen. false if none took it.
  bool follow_peer(Time now, std::span<uint8_t> d, uint32_t id, const SocketAddress& from);
  /// What a lane may try to open: `d` itself, or with `several` lanes to try
  /// a fresh copy in scratch_ (a failed tag check leaves it half decrypted).
  std::span<uint8_t> trial_copy(std::span<uint8_t> d, bool several);
  void send_feedback(Time now);
  void flush();
  void detach_stopped();

  std::unique_ptr<UdpSocket> socket_;
  std::unique_ptr<TxBatch> tx_;
  std::unique_ptr<RxBatch> rx_;
  std::vector<uint8_t> scratch_;  // a copy per trial open when several lanes wait for a peer
  IoWaiter waiter_;
  LaneClock clock_;
  SocketAddress local_;
  bool exclusive_ = false;

  // I/O thread only.
  std::vector<UdpRecvLane*> lanes_;
  std::vector<UdpRecvLane*> candidates_;  // reused
  UdpRecvLane* last_ = nullptr;           // the last lane a datagram went to: most datagrams follow it
  std::atomic<uint64_t> malformed_{0}, unknown_lane_{0}, foreign_source_{0}, unauthenticated_{0}, migrated_{0};

  std::mutex mu_;  // pending_
  std::vector<UdpRecvLane*> pending_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// A receiver's shared ports, one per local address (port number included),
/// each opened on first use and kept while the registry lives (`braid
/// recv`: the Receiver's, for all its sessions). Thread-safe.
class UdpRecvPorts {
 public:
  explicit UdpRecvPorts(SocketOptions opts = {}) : opts_(opts) {}
  /// The port bound to `local`, opened now if it is not yet. Null with
  /// `error` if it cannot be bound (e.g. another program has that UDP port).
  std::shared_ptr<UdpRecvPort> get(const SocketAddress& local, std::string& error);
  std::vector<std::shared_ptr<UdpRecvPort>> all() const;

 private:
  SocketOptions opts_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<UdpRecvPort>> ports_;
};

}  // namespace braid::udp
