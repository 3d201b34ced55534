// TCP_INFO with the kernel's own struct: glibc's <netinet/tcp.h> stops at
// tcpi_total_retrans (no bytes acked, min RTT or rates), and the two headers
// cannot meet in one file.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

#include "engine/lanes/tcp.hpp"

namespace braid::lanes {

bool tcp_kernel_info(int fd, TcpKernelInfo& out) {
  struct tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  out.rtt_us = info.tcpi_rtt;
  out.total_retrans = info.tcpi_total_retrans;
  out.snd_mss = info.tcpi_snd_mss;
  out.pmtu = info.tcpi_pmtu;
  out.snd_cwnd = info.tcpi_snd_cwnd;
  // Older kernels return a shorter struct: the fields past its end stay zero.
  out.pacing_rate = len > offsetof(struct tcp_info, tcpi_pacing_rate) ? info.tcpi_pacing_rate : 0;
  out.bytes_acked = len > offsetof(struct tcp_info, tcpi_bytes_acked) ? info.tcpi_bytes_acked : 0;
  out.min_rtt_us = len > offsetof(struct tcp_info, tcpi_min_rtt) ? info.tcpi_min_rtt : 0;
  out.delivery_rate = len > offsetof(struct tcp_info, tcpi_delivery_rate) ? info.tcpi_delivery_rate : 0;
  out.segs_in = len > offsetof(struct tcp_info, tcpi_segs_in) ? info.tcpi_segs_in : 0;
  out.segs_out = len > offsetof(struct tcp_info, tcpi_segs_out) ? info.tcpi_segs_out : 0;
  out.delivered = len > offsetof(struct tcp_info, tcpi_delivered) ? info.tcpi_delivered : 0;
  out.unacked = info.tcpi_unacked;
  out.notsent_bytes = len > offsetof(struct tcp_info, tcpi_notsent_bytes) ? info.tcpi_notsent_bytes : 0;
  out.delivery_rate_app_limited =
      len > offsetof(struct tcp_info, tcpi_delivery_rate) && info.tcpi_delivery_rate_app_limited != 0;
  return true;
}

}  // namespace braid::lanes
