// A TCP lane's scavenger: `--background` for lanes whose transport is the
// kernel's TCP. braid cannot replace the kernel's congestion controller, but
// it can cap the socket's pacing rate (SO_MAX_PACING_RATE, bytes per second;
// TCP paces itself under the cap since Linux 4.13, no fq qdisc needed). This
// controller decides that cap from what the kernel reports (struct tcp_info),
// the LEDBAT way (ledbat.hpp, as the UDP lanes' background controller):
//
//  - queueing delay = the kernel's smoothed RTT (tcpi_rtt) minus its minimum
//    over 10 minutes, min of the last 2 samples (see below);
//  - no cap while the kernel's own start-up has not met the queue (below
//    3/4 of the 10 ms target): a `--background` transfer on an idle path
//    behaves like any other;
//  - then a cap: below target it grows by LEDBAT's step (one MSS per RTT per
//    RTT, scaled by how far below target), and up to 1.5× per RTT while the
//    queue is nearly empty; above target it shrinks by up to half per RTT
//    (LEDBAT++), so while another flow holds a queue above the target the cap
//    falls to 2 MSS per RTT (near zero); a retransmission while there is a
//    queue (≥ target/4) halves it, once per RTT — without a queue a loss is
//    random or a spurious tail-loss probe, and the kernel answers it anyway;
//  - the cap never runs more than 1.25× (2× in slow start) ahead of the
//    acked rate (RFC 6817's "never beyond flight size + growth"): the larger
//    of the rates over the last RTT and over the last 10 RTTs, so that acks
//    that pause for an RTT — a stalled receiver, a delay spike — do not
//    send the cap to its floor, and a burst of compressed acks does not let
//    it run far ahead of the link;
//  - when the queue has stayed below a quarter of the target for 8 RTTs while
//    the cap is under 1/8 of the largest rate seen, the competitor has left:
//    the cap doubles per RTT again (slow start) and the decision says
//    `restart_probe`, so the engine can put the kernel's controller back into
//    its own start-up (its rate estimate has shrunk to the cap meanwhile).
//    That slow start stops doubling at the largest rate acked so far and
//    ends when the acked rate is back at 0.9 of it (or, as any, on a queue
//    of 3/4 of the target).
//
// At a few segments per RTT the kernel's srtt is a poor delay signal: it
// moves 1/8 per ACK, and the receiver holds the ACK of a lone segment until
// the next one arrives. So a delay sample is the srtt de-smoothed by the
// number of ACKs since the last look (tcpi_segs_in), less the gap between
// segments at the cap they were sent under (≤ 44 ms, the delayed-ACK timer
// of 40 ms on a 4 ms kernel tick).
//
// Pure: time comes in with each sample, the cap goes out as the return value.
// The engine samples every ~10 ms; any interval works (changes are per RTT).
#pragma once

#include <cstdint>
#include <optional>

#include "core/transport/ledbat.hpp"
#include "core/transport/shared_base_rtt.hpp"
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
  // (the controller then assumes one ACK per segment acked).
  uint32_t segs_in = 0;
  Bytes mss{1448};           // tcpi_snd_mss
};

/// The smallest RTT a sample may show (loopback is faster than a tick).
inline constexpr Duration kMinTcpRtt = Duration::micros(100);
/// The longest a receiver holds the ACK of a lone segment: 40 ms and the
/// kernel tick after it (tcp_pacing_cap.cpp says why it matters).
inline constexpr Duration kDelayedAckMax = Duration::millis(44);

/// The RTT sample behind the kernel's smoothed srtt at `cur`: the srtt
/// de-smoothed by the ACKs since `prev` (RFC 6298 moves it 1/8 per ACK).
/// `cur`'s srtt when nothing new was acked.
Duration latest_rtt_sample(const TcpSample& prev, const TcpSample& cur, Bytes mss);

struct TcpPacingCapConfig {
  Duration target = Duration::millis(10);  // added delay it aims for (as ControllerConfig::background_target)
  /// The base RTT shared by the lanes leaving by one interface (nullptr:
  /// the lane's own). A lane that opens while its siblings hold a queue
  /// takes that queue for its base otherwise, and adds its own on top
  /// (shared_base_rtt.hpp: BBR's latecomer problem).
  SharedBaseRtt* shared_base = nullptr;
};

/// What to do with the socket after a sample.
struct TcpPacingDecision {
  std::optional<Rate> cap;      // SO_MAX_PACING_RATE; nullopt: no cap (the kernel's own rate)
  bool restart_probe = false;   // the path looks free again: restart the kernel controller's start-up
};

class TcpPacingCap {
 public:
  explicit TcpPacingCap(const TcpPacingCapConfig& cfg = {});

  /// Feeds one sample (times must not go backwards) and returns the cap.
  TcpPacingDecision on_sample(const TcpSample& s);

  std::optional<Rate> cap() const { return capped_ ? std::optional<Rate>(cap_) : std::nullopt; }
  Duration queuing_delay() const { return queue_; }
  /// Bytes acked per second over about the last RTT.
  Rate acked_rate() const { return acked_rate_; }
  /// Bytes acked per second over about the last 10 RTTs (as far as the
  /// history of 64 samples reaches): the cap stays within a factor of the
  /// larger of the two rates.
  Rate long_acked_rate() const { return long_acked_rate_; }
  bool in_slow_start() const { return slow_start_; }
  /// 2 MSS per smoothed RTT: the cap's floor (RFC 6817's MIN_CWND).
  Rate floor() const;

 private:
  void update_acked_rate(const TcpSample& s);
  /// The lowest cap in effect over the last smoothed RTT: the pace at which
  /// the segments now being acked were sent.
  Rate cap_as_sent(Time now) const;

  TcpPacingCapConfig cfg_;
  ledbat::DelayFilter delays_;
  Duration queue_;  // the current delay less the lane's base, or the path's if shared and smaller
  bool started_ = false;
  TcpSample last_;
  Bytes mss_{1448};
  Duration srtt_;
  Duration path_rtt_ = Duration::infinite();  // the last delay sample (srtt without delayed-ACK time)
  Duration loop_rtt_ = Duration::infinite();  // min(srtt, the last de-smoothed sample): per-RTT steps

  bool capped_ = false;   // false until the first start-up meets the queue
  bool slow_start_ = true;
  Rate cap_;
  Rate max_rate_;         // the largest acked rate over 2 RTTs seen
  Time last_decrease_ = Time::zero();
  bool decreased_ever_ = false;
  Time quiet_since_ = Time::never();

  // Acked bytes over time, to measure the acked rate over about one RTT.
  static constexpr size_t kHistory = 64;
  struct Point {
    Time t;
    uint64_t acked = 0;
    Rate cap;  // the cap in effect until t (zero: none)
  };
  Point history_[kHistory];
  size_t history_count_ = 0;
  size_t history_next_ = 0;
  Rate acked_rate_;
  Rate two_rtt_acked_rate_;
  Rate long_acked_rate_;
  Rate rate_since(const TcpSample& s, Time since) const;
};

}  // namespace braid::transport
