#include "core/transport/tcp_sample.hpp"

#include <algorithm>
#include <cmath>

namespace braid::transport {

Duration latest_rtt_sample(const TcpSample& prev, const TcpSample& s, Bytes mss) {
  // The kernel's srtt moves 1/8 of the way to each RTT sample (RFC 6298).
  // With k ACKs since the last look, the latest sample was about
  // srtt_old + Δsrtt / (1 − (7/8)^k): at full rate (k large) that is srtt
  // itself, at a few segments per RTT it undoes a smoothing that otherwise
  // took ~2 s to show a drained queue on netlab (and so held the cap at its
  // floor that long after the competitor left). k is the ACKs received
  // (tcpi_segs_in); without that count, the segments acked bound it from
  // above — but a receiver may ACK only every second segment (the kernel's
  // own rule; braid's now ACKs on read), and counting
  // segments left half of a drained queue's srtt in the samples (read as
  // a queue of 20-30 ms, it ended the slow start after a restart).
  // Under loss the segments acked undercount: ACKs that SACK segments
  // beyond a hole are RTT samples each, and bytes_acked moves only when the
  // hole is filled. The kernel's delivered count includes them; undercounted,
  // four SACKs' move of the srtt was taken for one sample's and magnified
  // eightfold: on netlab's 1 %-loss link a sample of 33.8 ms on a 40 ms path.
  if (s.bytes_acked <= prev.bytes_acked || prev.srtt.ns() <= 0 || s.srtt.ns() <= 0 || mss.count() == 0)
    return s.srtt;
  const double acked = static_cast<double>(s.bytes_acked - prev.bytes_acked) / mss.as_double();
  const uint32_t delivered = s.delivered - prev.delivered;  // wraps as the kernel's counter does
  const double segments =
      s.delivered != 0 && prev.delivered != 0 && delivered > 0 ? static_cast<double>(delivered) : acked;
  const uint32_t acks = s.segs_in - prev.segs_in;  // wraps as the kernel's counter does
  const double k = std::max(1.0, s.segs_in != 0 && prev.segs_in != 0 && acks > 0
                                     ? std::min(static_cast<double>(acks), std::max(segments, 1.0))
                                     : segments);
  const double moved = 1.0 - std::pow(7.0 / 8.0, k);
  return std::max(prev.srtt + (s.srtt - prev.srtt) / moved, kMinTcpRtt);
}

}  // namespace braid::transport
