// Plain TCP for lanes: connect (optionally bound to a local address, so the
// lane really leaves through that interface), listen, and the socket options
// every lane gets.
#pragma once

#include <vector>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/units.hpp"
#include "engine/lanes/endpoint.hpp"
#include "engine/security/unique_fd.h"

namespace braid::lanes {

/// Send-side buffering kept shallow so that the scheduler, not the kernel,
/// decides what is in flight: TCP_NOTSENT_LOWAT lets the kernel hold at most
/// this much not-yet-sent data beyond what is in flight on the wire.
constexpr int kNotSentLowat = 512 * 1024;
/// Under a pacing cap the kernel drains that slowly: 512 KiB is 0.84 s at
/// 5 Mbit/s, bytes the scheduler can no longer move to a faster lane and a
/// metered link carries after the transfer has ended. A capped lane keeps
/// this much of its rate unsent instead, at least kNotSentLowatFloor: caps
/// above ~21 Mbit/s keep 512 KiB. 50 ms cost the coupled cap on a 10 Mbit/s
/// uplink 2 % in half the runs (bench/netlab/udp uplink10); 200 ms nothing.
constexpr double kNotSentSecondsCapped = 0.2;
constexpr int kNotSentLowatFloor = 64 * 1024;
/// The low-water mark for a lane paced at `cap` (none: kNotSentLowat).
int notsent_lowat_for(std::optional<Rate> cap);
/// TCP_NOTSENT_LOWAT; false if the kernel refused.
bool set_notsent_lowat(int fd, int bytes);

/// Connects with a timeout; binds to `local` first if it is set (port 0),
/// and to the interface `device` if it is not empty (SO_BINDTODEVICE: the
/// packets leave there whatever the routing table prefers).
/// On failure returns an invalid fd and sets `error` (and `err` to errno).
security::UniqueFd connect_tcp(const Endpoint& remote, const Endpoint* local, int timeout_ms, std::string& error,
                               int& err, const std::string& device = {});

/// SO_BINDTODEVICE; false with errno set if the kernel refused.
bool bind_to_device(int fd, const std::string& device);

/// A listening socket on `where` (port 0 picks a free one). An IPv6 wildcard
/// also takes IPv4 (dual stack).
security::UniqueFd listen_tcp(const Endpoint& where, std::string& error);

/// TCP_NODELAY, TCP_NOTSENT_LOWAT, keepalive (5 s idle, 3 probes 2 s apart)
/// and a 15 s user timeout, so a lane whose path silently died errors out
/// in ~15 s instead of hanging (tcp.cpp says why these figures).
void tune_lane_socket(int fd);

/// Caps the socket's pacing rate (SO_MAX_PACING_RATE; TCP paces itself
/// since Linux 4.13, no fq qdisc needed): `--rate-limit` on a TCP lane.
bool set_max_pacing_rate(int fd, Rate rate);
/// TCP_CONGESTION: the kernel controller for this socket ("bbr", "cubic"…).
/// False (errno set) if the kernel does not have it.
bool set_congestion_control(int fd, const std::string& name);
/// The kernel's controllers (net.ipv4.tcp_available_congestion_control).
std::vector<std::string> kernel_congestion_controls();

/// Lifts the socket's pacing cap (SO_MAX_PACING_RATE = ~0, the kernel's "none").
bool clear_max_pacing_rate(int fd);
/// The socket's kernel controller (TCP_CONGESTION); empty if unknown.
std::string congestion_control_of(int fd);
/// Puts the socket's kernel controller back into its start-up: Linux
/// re-initialises a controller when a socket switches to it, so this switches
/// to another built-in one and back (bbr keeps the socket's min RTT, which
/// lives in the socket, and starts from STARTUP; cubic forgets its epoch).
/// The `--background` pacing cap calls it when the path is free again.
bool restart_congestion_control(int fd);

/// What the kernel reports about a connected TCP socket's sending side
/// (TCP_INFO, with the fields glibc's struct tcp_info lacks).
struct TcpKernelInfo {
  uint32_t rtt_us = 0;          // smoothed RTT
  uint32_t min_rtt_us = 0;      // windowed minimum RTT
  uint64_t bytes_acked = 0;     // cumulative
  uint32_t total_retrans = 0;   // retransmitted segments, cumulative
  uint32_t snd_mss = 0;         // payload bytes per full segment (options taken off)
  uint32_t pmtu = 0;            // the path's MTU: a full segment's IP packet, headers in
  uint32_t snd_cwnd = 0;        // segments
  uint64_t pacing_rate = 0;     // bytes/s: the kernel's own pacing rate, under any cap
  uint64_t delivery_rate = 0;   // bytes/s: the latest delivery-rate sample
  uint32_t segs_in = 0;         // segments received, cumulative (wraps); 0 before Linux 4.2
  uint32_t segs_out = 0;        // segments sent, retransmissions included, cumulative (wraps)
  uint32_t delivered = 0;       // segments delivered, SACKed ones included, cumulative (wraps); 0 before Linux 4.18
  uint32_t unacked = 0;         // segments in flight
  uint32_t notsent_bytes = 0;   // written by us, not yet sent by the kernel
  bool delivery_rate_app_limited = false;  // the latest sample was limited by what we gave, not the path
};
/// Reads TCP_INFO (tcp_info.cpp); false if the socket has none.
bool tcp_kernel_info(int fd, TcpKernelInfo& out);

/// The kernel's smoothed RTT (µs) and retransmitted segments so far of a
/// connected TCP socket (TCP_INFO); false if unavailable. `--transport auto`.
bool tcp_path_info(int fd, uint32_t& rtt_us, uint32_t& retransmits);

/// Whole-buffer send/receive on a blocking socket. false on error or EOF
/// (`err` = errno, 0 for EOF). `ack_each_read` (TCP sockets): no ACK the
/// kernel holds back waits beyond the read of its data (tcp.cpp says why).
bool send_all(int fd, const uint8_t* data, size_t len, int& err);
bool recv_all(int fd, uint8_t* data, size_t len, int& err, bool ack_each_read = false);

}  // namespace braid::lanes
