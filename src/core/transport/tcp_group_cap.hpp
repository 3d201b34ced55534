// The TCP lanes' pacing cap: low queueing delay for the group of lanes
// that share a bottleneck, at (nearly) the rate of one bbr flow — and under
// `--background`, a scavenger's (TcpGroupCapConfig::yields).
//
// braid cannot replace the kernel's congestion controller, but it can cap
// a socket's pacing rate (SO_MAX_PACING_RATE; TCP paces itself under it
// since Linux 4.13, no fq qdisc needed), from what the kernel reports
// (struct tcp_info, tcp_sample.hpp).
//
// Each TCP lane runs the kernel's own controller (bbr or cubic). Several of
// them on one bottleneck — streams × address pairs — each keep their own
// queue and the queues add up: on a 4 Mbit/s uplink with a deep buffer two
// bbr lanes added 115 ms of delay where one bbr flow adds ~20 (issue 15).
// This controller couples them: one rate R for the whole group, steered by
// the group's queueing delay towards a target of a few milliseconds, shared
// among the lanes by what each delivers:
//
//  - queueing delay: per lane the kernel's srtt, de-smoothed by the ACKs
//    since the last look (`latest_rtt_sample`; braid's receiver ACKs each
//    segment as it reads it, so no ACK waits), filtered as RFC 6817
//    does; the group's delay is the mean current delay of the lanes acked
//    lately, weighted by their rates, less the smallest base of any lane (the kernel's min_rtt
//    counts: the handshake's RTT) — they cross one queue, and a lane that
//    opened while the others already sent never saw the empty path;
//  - no cap until the kernels' start-up has met the queue (3/4 target):
//    an idle path fills at the kernel's own pace, and the cap starts at
//    what is acked while that queue stands;
//  - then R = B × a factor, B the bottleneck's rate estimate (the largest
//    acked rate of the group over 4 RTTs seen in the last 10 RTTs; with a
//    queue standing, the mean acked rate since it began to stand, over
//    2 to 8 RTTs — RTTs of a clock
//    that stops while the whole group is silent, so an outage does not
//    age the estimate away): above the target
//    1 − k (q − target) / rtt, which drains the excess in about rtt / k
//    (k = 1/2: stable for feedback delays up to about an RTT and a half —
//    sampling and the delay filter add 10-20 ms to the path's RTT), at most
//    halving; below it up to 1.25 (BBR's probing gain) by how far below,
//    and R also grows by that factor per RTT from itself up to 1.5 × B, so a
//    kernel paced by the cap (which then takes the cap for the path's rate)
//    has room to probe;
//  - a queue that is not ours: while the delay stays above twice the target
//    for 1 s (≥ 10 RTTs) without shrinking by a quarter although R is below
//    B, another flow holds the queue (a cubic download, a backup). A foreground transfer competes
//    then: the cap is lifted (the kernel's controller runs free) and tried
//    again after 5 s, 10 s, … up to 40 s while the queue stays. A
//    background one (TcpGroupCapConfig::yields) stays at its floor;
//  - lanes share R by their acked rates (3/4) and evenly (1/4), so a lane
//    that can deliver more shows it at the next look;
//  - while no lane has anything waiting in its socket the group sends what
//    the source gives, and R holds; so it does while no lane is acked (an
//    outage): nothing new to steer by;
//  - room left unused (the group acks under 0.8 B, no queue) while lanes
//    with data waiting stay well below their caps: their kernels restart
//    (TcpLaneDecision::restart).
//
// Pure: samples come in with their time, caps go out as the return value.
// The engine samples every ~10 ms.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/transport/ledbat.hpp"
#include "core/transport/tcp_sample.hpp"
#include "core/units.hpp"

namespace braid::transport {

struct TcpGroupCapConfig {
  Duration target = Duration::millis(5);  // the queueing delay the group aims for
  /// A scavenger (`--background`): a queue that is not the group's never
  /// lifts the cap; the group drains to its floor and stays there while
  /// the other flow holds the queue, as LEDBAT yields.
  bool yields = false;
};

/// One lane's look at its socket, with the lane's id (stable while it lives).
struct TcpLaneSample {
  uint64_t lane = 0;
  TcpSample tcp;
  Duration min_rtt;  // tcpi_min_rtt (0: not known): the lane's base, before its own samples show one
  Rate pacing;       // tcpi_pacing_rate, the kernel's own pace under any cap (0: not known)
  bool app_limited = false;  // nothing waits in its socket (tcpi_notsent_bytes 0): it sends what it is given
};

/// What a lane gets: its cap, and whether its kernel controller should start over.
struct TcpLaneDecision {
  std::optional<Rate> cap;  // nullopt: uncapped
  /// The kernel has paced this lane well below its cap for a while though
  /// it had data waiting: its own estimate fell with an earlier, lower cap
  /// and at a few segments per RTT (delayed ACKs, a window sized from the
  /// unloaded RTT) it does not climb back. Restarting its start-up lets it
  /// refill the cap in a few RTTs.
  /// Also at once (a loop RTT) when the group leaves the path's room unused
  /// and this lane, with data waiting, is well below its cap: another lane
  /// left or paused (bbr's PROBE_RTT) and this kernel's estimate is its old
  /// share. At most once per half second per lane.
  bool restart = false;
};

class TcpGroupCap {
 public:
  explicit TcpGroupCap(const TcpGroupCapConfig& cfg = {});

  /// One round of samples of the group's lanes (times must not go back).
  /// Returns each lane's decision in the order given. Lanes not in a round
  /// are forgotten.
  std::vector<TcpLaneDecision> on_samples(Time now, const std::vector<TcpLaneSample>& lanes);

  /// The group's rate (nullopt: uncapped).
  std::optional<Rate> rate() const { return capped_ ? std::optional<Rate>(rate_) : std::nullopt; }
  Duration queuing_delay() const { return queue_; }
  Rate bottleneck_rate() const { return bottleneck_; }
  /// Another flow holds the queue: the cap is lifted until the next try.
  bool competing() const { return competing_; }

 private:
  struct Lane {
    TcpSample last;
    bool started = false;
    ledbat::DelayFilter delays{2};  // the kernel's srtt is smoothed already: 2 looks, not 4 per-ACK samples
    Duration min_rtt;              // the kernel's (tcpi_min_rtt), 0: not known
    Duration latest;               // its latest RTT sample, de-smoothed (latest_rtt_sample), 0: none yet
    Time last_ack = Time::never();
    Rate share_rate;               // its acked rate, smoothed
    std::optional<Rate> cap;       // its cap last round
    Time lagging_since = Time::never();  // paced well below its cap with data waiting, since
    Time restarted_at = Time::never();   // its kernel controller last started over
    /// The least RTT the lane can have: the lower of the kernel's min RTT
    /// (when known) and the lane's own filtered base — which is below the
    /// kernel's only from samples taken before it was known, or after its
    /// windowed minimum (5 minutes) rose.
    Duration floor() const { return min_rtt.ns() > 0 ? std::min(min_rtt, delays.base()) : delays.base(); }
  };
  /// What one round of samples says, for the steps of on_samples.
  struct Look {
    Time now;
    Duration rtt;           // the loop's round: the path's RTT, at least kMinLoopRtt
    Duration dt;            // since the last look (0 at the first)
    Rate floor;             // the group's floor: two segments per rtt
    Rate recent;            // the group's acked rate over the last kRateRtts rtts of the delivery clock
    Rate busy;              // its acked rate while a queue stands (kBusyQueue; 0: none stands, or nothing acked)
    Duration steer_target;  // the target, widened while the evidence is thin (kTrustedSegments)
    bool silent = false;    // no lane acked for the hold: nothing new to steer by
    bool app_limited = false;  // no lane has data waiting in its socket
  };
  // The steps of a round, in order (tcp_group_cap.cpp says why each does what it does).
  /// The lanes' samples in: lanes kept or forgotten, the delivery clock, the rates, the queue.
  Look read_lanes(Time now, const std::vector<TcpLaneSample>& samples);
  /// The group's queueing delay (queue_) and base (base_) from its lanes' delays.
  void measure_queue(Time now);
  /// The path's peak, and room the lanes leave unused: refilling or not.
  void update_room(const Look& look);
  /// Uncapped (the kernels' start, another flow's queue): engages the cap
  /// once it is due, at the recent rate or what is acked while the queue
  /// stands, the larger; false while the group stays uncapped.
  bool engage(const Look& look);
  /// Capped: R for this round, from the queue against the target.
  void steer(const Look& look);
  /// True when a queue that is not the group's lifts the cap.
  bool lift_for_foreign_queue(const Look& look);
  /// R shared among the lanes, and which kernels restart.
  void share(const Look& look, const std::vector<TcpLaneSample>& samples, std::vector<TcpLaneDecision>& caps);
  void update_lane(Lane& l, const TcpLaneSample& s, Time now);
  void update_rates(Time clock, uint64_t acked_now);
  /// The group's acked rate since `since`, both on the delivery clock.
  Rate acked_since(Time clock, Time since) const;
  /// Advances the delivery clock over a look at `now` (new_acks: any lane's).
  void advance_clock(Time now, bool new_acks, Duration hold);
  /// Three ACKs' spacing at the group's rate: no silence before (tcp_group_cap.cpp).
  Duration ack_gaps(Bytes mss) const;

  TcpGroupCapConfig cfg_;
  std::map<uint64_t, Lane> lanes_;
  Duration srtt_ = Duration::millis(100);
  Duration queue_;
  Duration base_;  // the group's base RTT: the smallest of its lanes'
  bool have_queue_ = false;
  Time busy_since_ = Time::never();  // a queue has stood since (delivery clock; never: none stands)

  bool capped_ = false;
  Rate rate_;
  Rate bottleneck_;
  bool competing_ = false;
  Time above_since_ = Time::never();  // the queue above 2 × target since
  Time room_since_ = Time::never();   // the lanes leave room unused since (tcp_group_cap.cpp)
  Rate peak_;                         // the path's rate as last seen full (kPeakMemory)
  bool refilling_ = false;            // taking room back: R doubles per RTT up to peak_
  Time peak_at_ = Time::never();
  Duration queue_then_;               // ...and what it was then
  Time retry_at_ = Time::never();
  Duration retry_after_ = Duration::seconds(5);
  Time last_ = Time::never();
  Time last_look_ = Time::never();
  // The delivery clock: wall time, less the stretches in which no lane of
  // the group was acked beyond a short hold (an outage, a lane replaced).
  // The rate windows are measured on it: a path that went dark for 4 s
  // came back to a cap built from the dark time's rate (nothing) and took
  // a second to climb to 100 Mbit/s where the kernel alone took one RTT.
  Time clock_ = Time::zero();
  Time last_acked_ = Time::never();  // the last look with new acks (wall time)

  // The group's acked bytes over time (cumulative, summed from the lanes' deltas).
  static constexpr size_t kHistory = 128;
  struct Point {
    Time t;  // on the delivery clock
    uint64_t acked = 0;
    Rate windowed;  // acked rate over the kRateRtts RTTs before t (tcp_group_cap.cpp)
  };
  Point history_[kHistory];
  size_t history_count_ = 0;
  size_t history_next_ = 0;
  uint64_t acked_total_ = 0;
  uint64_t acked_at_last_look_ = 0;
};

}  // namespace braid::transport
