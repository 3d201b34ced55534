// What braid reads from a TCP lane's kernel state (struct tcp_info) to cap
// its pacing rate (tcp_group_cap.hpp), and how it turns the kernel's
// smoothed RTT into a delay sample.
//
// At a few segments per RTT the kernel's srtt is a poor delay signal: it
// moves 1/8 per ACK. So a delay sample is the srtt de-smoothed by the
// number of ACKs since the last look (latest_rtt_sample). braid's receiver
// ACKs each segment as it reads it (lanes::recv_all), so no held ACK stands
// in it; a receiver slow to read (a busy host) still adds its delay.
#pragma once

#include <cstdint>

#include "core/units.hpp"

namespace braid::transport {

/// One look at a TCP socket's kernel state (struct tcp_info).
struct TcpSample {
  Time now;
  Duration srtt;             // tcpi_rtt: the kernel's smoothed RTT
  uint64_t bytes_acked = 0;  // tcpi_bytes_acked: cumulative
  uint64_t retransmits = 0;  // tcpi_total_retrans: cumulative segments
  // tcpi_segs_in: segments received, cumulative, wrapping at 2^32 — on a
  // sending lane nearly all are ACKs, each one srtt update. 0: not known
  // (latest_rtt_sample then assumes one ACK per segment acked).
  uint32_t segs_in = 0;
  // tcpi_delivered: segments delivered, cumulative, wrapping at 2^32 —
  // SACKed ones included, which bytes_acked counts only when the hole
  // before them is filled. 0: not known (bytes_acked / mss stands in).
  uint32_t delivered = 0;
  Bytes mss{1448};           // tcpi_snd_mss
};

/// The smallest RTT a sample may show (loopback is faster than a tick).
inline constexpr Duration kMinTcpRtt = Duration::micros(100);

/// The RTT sample behind the kernel's smoothed srtt at `cur`: the srtt
/// de-smoothed by the ACKs since `prev` (RFC 6298 moves it 1/8 per ACK).
/// `cur`'s srtt when nothing new was acked.
Duration latest_rtt_sample(const TcpSample& prev, const TcpSample& cur, Bytes mss);

}  // namespace braid::transport
