#include "core/transport/tcp_group_cap.hpp"

#include <algorithm>
#include <cmath>

namespace braid::transport {

namespace {
// The loop's gain: R = B × (1 + k (target − q) / rtt) drains a queue above
// the target in about rtt / k. The delay the loop sees is an RTT and the
// engine's 10 ms look and the 2-sample filter late; k = 1/2 keeps it from
// overshooting by more than about the target on the paths measured.
constexpr double kGain = 0.5;
// Below the target the group probes at most 1.25 × B (BBR's probing gain):
// a rate cap above the bottleneck is queue at once, growing by a quarter of
// the link per unit of time until the signal comes back.
constexpr double kMaxProbe = 1.25;
// Above it, at most halve per look (a lane never stops: acks keep coming).
constexpr double kMaxDrain = 0.5;
// Below the target R grows by the probing factor per RTT up to this many
// times B, and one look (the engine's 10 ms, or a late one) counts for at
// most 2 RTTs.
constexpr double kMaxRoom = 1.5;
constexpr double kMaxRttsPerLook = 2.0;
// The bottleneck's rate: the largest acked rate over 4 RTTs seen within the
// last 10 RTTs (BBR's filter window; a single RTT's rate carries bursts of
// compressed ACKs, 1.06 × the link per lane on netlab; 2 RTTs still
// held the group's queue a few ms above the target in the simulated model).
constexpr double kRateRtts = 4;
constexpr double kBottleneckWindowRtts = 10;
// With a queue of at least half the target the link is busy: its rate is
// the mean acked rate since the queue stood, over at most this many RTTs
// and at least kBusyMinRtts. Not further back than the queue: a group
// whose kernels' start-up had just met it measured the link over 8 RTTs
// of their slow start, at a quarter of its rate, drained to that and
// climbed back at the probing gain (two lanes on a 500 Mbit/s, 40 ms
// netlab link were capped at 140 Mbit/s as a 64 MiB transfer began).
constexpr double kBusyQueue = 0.5;
constexpr double kBusyRateRtts = 8;
constexpr double kBusyMinRtts = 2;
// A queue above 2 × target that outlasts max(1 s, 10 RTTs) while the cap
// is draining, and has not shrunk by a quarter meanwhile, is not the
// group's: under a cap at half the link its own drains by half a second per
// second (a start-up's excess, a lane's burst).
constexpr double kForeignQueueTargets = 2;
constexpr double kOwnQueueShrinks = 0.75;
constexpr Duration kForeignQueueTime = Duration::seconds(1);
constexpr double kForeignQueueRtts = 10;
constexpr Duration kFirstRetry = Duration::seconds(5);
constexpr Duration kLastRetry = Duration::seconds(40);
// Lanes share R by their acked rates, with this much shared evenly so a
// lane held low by its share can show that it could do more.
constexpr double kEvenShare = 0.25;
// A lane's kernel pacing below 0.7 of its cap for max(1 s, 20 RTTs) with
// data waiting: its controller is restarted (TcpLaneDecision::restart).
constexpr double kLaggingPace = 0.7;
constexpr Duration kLaggingTime = Duration::seconds(1);
constexpr double kLaggingRtts = 20;
// A lane's delay counts towards the group's while its last ACK is this recent.
constexpr double kFreshRtts = 2;
constexpr Duration kFreshMin = Duration::millis(50);
// The loop's round is never shorter than its own feedback: the engine looks
// every 10 ms and the delay filter holds two looks, so what a new rate does
// shows 20-30 ms later whatever the path's RTT. On a LAN (an RTT of 0.05 ms)
// a loop counted in the path's RTTs re-shared the group by one look's acks,
// swung between half and 1.5 times the link at every look, and the kernels'
// bbr — whose rounds are that short — followed each low cap down and were
// slow to climb back: two lanes on a 40 Mbit/s tbf link moved 10-35 Mbit/s.
constexpr Duration kMinLoopRtt = Duration::millis(30);
// Below this many segments per round the queue signal is thin: each sample
// is a lone segment's ACK timing (delayed ACKs, the pacing gap, a busy
// host's scheduling), off by up to a segment's gap, and the reading grows
// as the rate falls. Read as queue it drove a lone lane on a 40 Mbit/s
// netlab path down to the group's floor (0.77 Mbit/s: 2 segments per 30 ms),
// where its samples read 5.4 ms against a 5 ms target and it never climbed
// back. Below it the target widens by the segment gap, scaled by how thin:
// the widening is gone at this many segments, where the ordinary slow
// uplinks (4 Mbit/s: 10 segments per round) live.
constexpr double kTrustedSegments = 8;
// The delivery clock runs through a silence of the whole group for at most
// this many loop RTTs (at least kFreshMin): the floor's two segments per
// RTT, or pairs acked at once, leave a look or two without an ACK, and
// those must count or the rate reads high; an outage's seconds must not.
constexpr double kSilenceHoldRtts = 2;
// Room the lanes leave unused: the group acks under this much of the
// path's peak rate with the queue below the target for a loop RTT, while
// lanes that have data waiting are paced, or deliver, well below their caps
// (kLaggingPace). Their kernels' own estimates are what holds them: bbr's
// 10-round filter forgets the link in a 200 ms PROBE_RTT at a short RTT, and
// a lane paced at its share climbs by a quarter per 8 rounds when the
// others leave (a trial stream closed, a lane in PROBE_RTT). On netlab's
// 100 Mbit/s link the group dipped to 24-58 Mbit/s for half a second at
// each. A restart (TcpLaneDecision::restart) refills the cap in a few RTTs;
// a lane is restarted at most once per kRestartSpacing (a restart while
// the kernel's srtt still holds a departed queue starts slowly, and the
// next one must not wait long).
constexpr double kRoomUnused = 0.8;
constexpr Duration kRestartSpacing = Duration::millis(500);
// Meanwhile R doubles per RTT up to the peak (the kernels' start-up after a
// restart; a scavenger whose competitor left took 3.1 s to refill a
// 100 Mbit/s link at the probing gain). The peak is the bottleneck's
// largest estimate, forgotten after this long without being seen again
// (a path that became slower: a wrong peak costs a restart a second).
constexpr double kRoomGrowthPerRtt = 2.0;
// A scavenger waits this many loop RTTs of room before it takes it: a
// competitor's queue empties for an RTT or two after each of its losses
// (cubic's decrease), and that room is the competitor's (RFC 6817's quiet
// period; braid's per-lane scavenger before the group cap waited 8 RTTs too).
constexpr double kScavengerQuietRtts = 8;
constexpr Duration kPeakMemory = Duration::seconds(30);
}  // namespace

TcpGroupCap::TcpGroupCap(const TcpGroupCapConfig& cfg) : cfg_(cfg) {}

Duration TcpGroupCap::ack_gaps(Bytes mss) const {
  // Three ACKs' spacing at R (two segments per ACK, as a receiver that
  // does not ACK on read, an older braid's, sends them): at a
  // scavenger's floor an ACK comes once per RTT or less, and a silence of
  // one loop RTT (30 ms) held its rate and ended its refill half the time.
  return capped_ && rate_.bytes_per_second() > 0 ? rate_.transfer_time(Bytes(mss.count() * 2)) * 3.0
                                                 : Duration::zero();
}

void TcpGroupCap::advance_clock(Time now, bool new_acks, Duration hold) {
  if (last_look_ == Time::never()) {
    if (new_acks) last_acked_ = now;
    return;
  }
  const Duration dt = now - last_look_;
  Duration counted = std::min(dt, hold);  // one long gap between looks counts as a silence
  if (!new_acks && last_acked_ != Time::never()) {
    // Silent: the part of this look still within the hold of the last ACK.
    const Time until = last_acked_ + hold;
    counted = until > last_look_ ? std::min(dt, until - last_look_) : Duration::zero();
  }
  clock_ = clock_ + counted;
  if (new_acks) last_acked_ = now;
}

Rate TcpGroupCap::acked_since(Time clock, Time since) const {
  const Point* from = nullptr;
  for (size_t i = 1; i < history_count_; ++i) {
    const Point& p = history_[(history_next_ + kHistory - 1 - i) % kHistory];
    from = &p;
    if (p.t <= since) break;
  }
  if (!from || clock <= from->t) return Rate();
  return Rate::over(Bytes(acked_total_ - from->acked), clock - from->t);
}

void TcpGroupCap::update_rates(Time clock, uint64_t acked_now) {
  const Duration rtt = std::max(srtt_, kMinLoopRtt);
  // A look in which the clock stood still (a silence) adds no point: an
  // outage's hundreds of looks would push the history out of the ring.
  if (history_count_ > 0 && history_[(history_next_ + kHistory - 1) % kHistory].t == clock) return;
  history_[history_next_] = {clock, acked_now, Rate()};
  Point& newest = history_[history_next_];
  history_next_ = (history_next_ + 1) % kHistory;
  history_count_ = std::min(history_count_ + 1, kHistory);
  newest.windowed = acked_since(clock, clock - rtt * kRateRtts);
  Rate best;
  for (size_t i = 0; i < history_count_; ++i) {
    const Point& q = history_[(history_next_ + kHistory - 1 - i) % kHistory];
    if (q.t < clock - rtt * kBottleneckWindowRtts) break;
    best = std::max(best, q.windowed);
  }
  bottleneck_ = best;
}

void TcpGroupCap::update_lane(Lane& l, const TcpLaneSample& s, Time now) {
  const TcpSample& t = s.tcp;
  if (!l.started) {
    l.started = true;
    l.last = t;
    // The kernel's minimum (the handshake's RTT at first) is the lane's
    // base until its own samples show one.
    if (s.min_rtt.ns() > 0) {
      l.min_rtt = s.min_rtt;
      l.delays.on_sample(now, s.min_rtt);
    }
    return;
  }
  if (s.min_rtt.ns() > 0) l.min_rtt = s.min_rtt;
  if (t.now <= l.last.now) return;
  const bool new_acks = t.bytes_acked > l.last.bytes_acked;
  const double dt = (t.now - l.last.now).to_seconds();
  const uint64_t delta = new_acks ? t.bytes_acked - l.last.bytes_acked : 0;
  acked_total_ += delta;
  // Its share: the acked rate, smoothed over about two RTTs.
  const double alpha = std::min(1.0, dt / (2 * std::max(srtt_, kMinLoopRtt).to_seconds()));
  l.share_rate = Rate::bytes_per_sec(l.share_rate.bytes_per_second() * (1 - alpha) + delta / dt * alpha);
  if (new_acks && t.srtt.ns() > 0) {
    // Never below the kernel's min RTT: the least of every RTT sample it
    // took, so a de-smoothed sample under it is the de-smoothing's error —
    // and in the lane's base it stays (the base is a minimum over minutes),
    // reading the difference as queue for the rest of the transfer: on
    // netlab's 1 %-loss link a base of 33.8 ms on a 40 ms path held two
    // lanes at 1.5 of 200 Mbit/s, reading 6 ms of queue on an empty path.
    Duration sample = latest_rtt_sample(l.last, t, t.mss);
    if (l.min_rtt.ns() > 0) sample = std::max(sample, l.min_rtt);
    l.latest = sample;
    // No allowance for ACK timing: braid's receiver ACKs each segment as it
    // reads it (lanes::recv_all's ack_each_read). The kernel alone holds a
    // lone segment's ACK until the next segment, and a pacing gap (up to
    // 40 ms) then stood in every sample; the allowance made for it here was
    // right only while the receiver's count of segments kept in step with
    // the sender's pairs, and read the queue high by a pair's gap when it
    // did not (netlab uplink10: three lanes held at 7 of 10 Mbit/s).
    l.delays.on_sample(now, sample);
    l.last_ack = now;
  }
  l.last = t;
}

void TcpGroupCap::measure_queue(Time now) {
  // The group's queue: the mean current delay of the lanes acked lately,
  // weighted by their rates, less the smallest base (the least of them
  // read several ms low with six lanes, each sample noisy with ACK timing). One queue, so the same excess on every lane:
  // the group's base is what a lane that opened while others already sent
  // never saw (its handshake crossed their queue), and lanes to farther
  // addresses have larger bases and currents alike.
  const Duration fresh = std::max(kFreshMin, srtt_ * kFreshRtts);
  std::optional<Duration> current, base;
  double current_sum = 0, weights = 0, total_share = 0;
  for (const auto& [id, l] : lanes_) total_share += l.share_rate.bytes_per_second();
  for (const auto& [id, l] : lanes_) {
    if (!l.delays.has_sample()) continue;
    base = base ? std::min(*base, l.floor()) : l.floor();
    if (l.last_ack != Time::never() && now - l.last_ack <= fresh) {
      // Weighted by what the lane carries: a lane that carries little (one
      // just opened, a trial stream, one the scheduler left dry) sends lone
      // segments, each sample one ACK's timing (a busy host's scheduling),
      // and its samples read high.
      const double w = l.share_rate.bytes_per_second() + 0.01 * total_share + 1e-9;
      current_sum += (l.delays.base() + l.delays.queuing_delay()).to_seconds() * w;
      weights += w;
    }
  }
  if (weights > 0) current = Duration::seconds_f(current_sum / weights);
  if (base) base_ = *base;
  if (current && base) {
    queue_ = std::max(*current - *base, Duration::zero());
    have_queue_ = true;
  }
}

TcpGroupCap::Look TcpGroupCap::read_lanes(Time now, const std::vector<TcpLaneSample>& samples) {
  // Lanes: new ones start, gone ones are forgotten.
  std::map<uint64_t, Lane> kept;
  Look look;
  look.now = now;
  look.app_limited = !samples.empty();
  for (const auto& s : samples) look.app_limited = look.app_limited && s.app_limited;
  Duration srtt = Duration::infinite();
  Bytes mss{1448};
  for (const auto& s : samples) {
    auto it = lanes_.find(s.lane);
    Lane l = it != lanes_.end() ? std::move(it->second) : Lane{};
    update_lane(l, s, now);
    if (s.tcp.srtt.ns() > 0) srtt = std::min(srtt, s.tcp.srtt);
    // The loop runs at the path's RTT as the latest samples show it: the
    // kernel's srtt moves 1/8 per ACK, and at a scavenger's floor (a few
    // ACKs per RTT) it still held a departed competitor's 300 ms queue for
    // 1.5 s, every step of the regrowth that long.
    if (l.latest.ns() > 0) srtt = std::min(srtt, l.latest);
    if (s.tcp.mss.count() > 0) mss = s.tcp.mss;
    kept.emplace(s.lane, std::move(l));
  }
  lanes_ = std::move(kept);
  if (srtt != Duration::infinite()) srtt_ = std::max(srtt, kMinTcpRtt);
  const bool new_acks = acked_total_ > acked_at_last_look_;
  // Silent: no lane of the group acked for the hold (silence_hold). Nothing new to steer
  // by — an outage, a lane being replaced — so the rate holds.
  const Duration gaps = ack_gaps(mss);
  look.silent = !new_acks && last_acked_ != Time::never() &&
                now - last_acked_ > std::max(std::max(srtt_, kMinLoopRtt), gaps);
  advance_clock(now, new_acks, std::max(std::max(kFreshMin, std::max(srtt_, kMinLoopRtt) * kSilenceHoldRtts), gaps));
  acked_at_last_look_ = acked_total_;
  update_rates(clock_, acked_total_);

  measure_queue(now);

  look.rtt = std::max(srtt_, kMinLoopRtt);
  look.dt = last_look_ == Time::never() ? Duration::zero() : now - last_look_;
  last_look_ = now;
  // The group's floor is RFC 6817's two segments per RTT — for the group,
  // not per lane: six lanes on a 2 Mbit/s uplink at two segments per RTT
  // each add up to the link, and the cap could not drain its own queue.
  // A lane below its share of the floor idles (a segment every few RTTs).
  look.floor = Rate::over(Bytes(ledbat::kMinPackets * mss.count()), look.rtt);
  look.recent = acked_since(clock_, clock_ - look.rtt * kRateRtts);
  // The target the rate is steered by, widened while the evidence is thin
  // (kTrustedSegments): by the gap between segments, rtt / segments, less
  // what it is at the trusted count. The start and the foreign-queue test
  // keep the plain target: they look at queues well above it.
  const double segments = std::max(1.0, look.recent.bytes_per_second() * look.rtt.to_seconds() / mss.count());
  look.steer_target = cfg_.target + look.rtt * std::max(0.0, 1.0 / segments - 1.0 / kTrustedSegments);
  // Busy: a queue stands (kBusyQueue), since when on the delivery clock.
  if (!have_queue_ || queue_ < look.steer_target * kBusyQueue) {
    busy_since_ = Time::never();
  } else {
    if (busy_since_ == Time::never()) busy_since_ = clock_;
    const Time since = std::clamp(busy_since_, clock_ - look.rtt * kBusyRateRtts, clock_ - look.rtt * kBusyMinRtts);
    look.busy = acked_since(clock_, since);
  }
  return look;
}

void TcpGroupCap::update_room(const Look& look) {
  const Duration target = cfg_.target;
  // The path's rate as last seen full (kPeakMemory): the bottleneck's
  // estimate follows what the kernels deliver, so it cannot say that the
  // path has room when they hold back (their own estimates being a share,
  // or a scavenger's floor after a competitor left). A standing queue says
  // the path is full at what is acked now — for a foreground group; a
  // scavenger's queue is mostly another flow's, and its peak only ages.
  if (bottleneck_ >= peak_ || look.now - peak_at_ > kPeakMemory ||
      (!cfg_.yields && !look.silent && queue_ > target && !bottleneck_.is_zero())) {
    peak_ = bottleneck_;
    peak_at_ = look.now;
  }
  // Room the lanes leave unused (kRoomUnused): since when. The queue is
  // judged against the target widened for thin evidence (a foreground
  // group's lanes at a few segments per round read ACK timing as queue).
  // Once seen it lasts until the group fills the room or a queue of twice
  // that target builds (a restart's first burst read 10 ms on netlab and
  // sent the count back to zero).
  // A scavenger judges by the plain target: at its floor the widened one
  // (tens of ms at a segment per round) let a cubic competitor's dips after
  // its losses read as room, and its lanes restarted while it was there.
  const bool seen = room_since_ != Time::never();
  const Duration room_target = cfg_.yields ? target : look.steer_target;
  const bool room = capped_ && !look.silent && !look.app_limited && !peak_.is_zero() &&
                    queue_ < room_target * (seen ? 2.0 : 1.0) && look.recent < peak_ * kRoomUnused;
  if (!room) room_since_ = Time::never();
  else if (!seen) room_since_ = look.now;
  // RTTs of the empty path for a scavenger's quiet period: the srtt still
  // holds the departed competitor's queue.
  const Duration quiet = cfg_.yields ? std::max(base_, kMinLoopRtt) * kScavengerQuietRtts : look.rtt;
  const bool room_lasts = room && look.now - room_since_ >= quiet;
  // Refilling: from room that lasted until the group fills it (0.8 of the
  // peak) or a queue of twice the (widened) target builds — a state, as a
  // slow start is: judged look by look, one look's ACK timing at a
  // scavenger's floor (5 ms against 3) ended it, and the link came back at
  // the probing gain (t90 2.6 s on netlab's 100 Mbit/s).
  if (room_lasts) refilling_ = true;
  if (refilling_ && (!capped_ || look.silent || look.app_limited || look.recent >= peak_ * kRoomUnused ||
                     queue_ >= look.steer_target * 2.0))
    refilling_ = false;
}

bool TcpGroupCap::engage(const Look& look) {
  if (competing_) {
    if (look.now < retry_at_) return false;
    // Try again: if the other flow has gone, the queue drains under the cap.
    competing_ = false;
    above_since_ = Time::never();
  } else if (!have_queue_ || queue_ < cfg_.target * ledbat::kSlowStartExit) {
    return false;  // the kernels' start-up has not built a queue yet
  }
  capped_ = true;
  // The queue the kernels' start-up built says the link is full: at what
  // is acked while it stands, not at the start-up's mean (look.recent).
  rate_ = std::max(std::max(look.recent, look.busy), look.floor);
  return true;
}

void TcpGroupCap::steer(const Look& look) {
  if (look.app_limited || look.silent) {
    // Nothing waits in any lane's socket (or nothing is acked at all):
    // what was acked says what the source gave (or that the path is dark
    // for now), not what the path takes. Keep the rate (a lane the
    // scheduler left dry for a moment otherwise came back to a cap at its
    // idle rate, and the kernel's own estimate had followed it down).
  } else if (!bottleneck_.is_zero()) {
    // Above the target: drain the excess in about rtt / k. Below it: probe
    // by up to a quarter, by how far below the target the queue is — not
    // per RTT of excess as the drain, or at a few segments per RTT, where
    // the delay samples carry milliseconds of ACK timing, the group crept
    // up by 1-2 % per look and held a 4 Mbit/s link at half.
    const Duration steer_target = look.steer_target;
    const double factor =
        queue_ > steer_target
            ? std::max(kMaxDrain, 1.0 - kGain * (queue_ - steer_target).to_seconds() / look.rtt.to_seconds())
            : std::min(kMaxProbe,
                       1.0 + (kMaxProbe - 1.0) * (steer_target - queue_).to_seconds() / steer_target.to_seconds());
    // Of the RTTs since the last look, at most kMaxRttsPerLook count.
    const double rtts = std::min(look.dt.to_seconds() / look.rtt.to_seconds(), kMaxRttsPerLook);
    // With a queue standing the link is busy, and the acked rate while it
    // stands is its rate without the max filter's bias (bursts of
    // compressed ACKs read 5 % high, which held the queue that many RTTs
    // of k above the target) and without the lag of its windows (a
    // start-up's rates from before the link was full); without one, the
    // filter's larger rate lets the group find a link that got faster.
    const Rate b = look.busy.is_zero() ? bottleneck_ : look.busy;
    Rate next = b * factor;
    // A scavenger drains from its own rate, compounding per RTT as LEDBAT++
    // does: when it drained from the busy rate alone (then over 8 RTTs, an
    // RTT of a competitor's queue each) it gave a joining cubic flow only
    // 0.84 of its solo rate in its second second (0.97 before the group cap).
    if (cfg_.yields && queue_ > steer_target && look.dt > Duration::zero())
      next = std::min(next, rate_ * std::pow(factor, rtts));
    // Below the target R also grows from itself, by the same factor per
    // RTT, up to 1.5 × B: a kernel controller paced by the cap measures the
    // cap as the path's rate and paces a little under it, so a cap that
    // only followed what was acked stalled there (four lanes on a 4 Mbit/s
    // uplink held at 0.5 Mbit/s each with the queue empty). Room above
    // what is acked lets the kernel's own probing find the link.
    // With room left unused it doubles per RTT up to the peak, as the
    // restarted kernels' start-up does (kRoomGrowthPerRtt).
    if (queue_ < steer_target && look.dt > Duration::zero()) {
      const double per_rtt = refilling_ ? kRoomGrowthPerRtt : factor;
      const double ceiling = b.bytes_per_second() * kMaxRoom;
      const double grown = rate_.bytes_per_second() * std::pow(per_rtt, rtts);
      next = std::max(next, Rate::bytes_per_sec(std::min(
                                grown, refilling_ ? std::max(ceiling, peak_.bytes_per_second()) : ceiling)));
    }
    rate_ = std::max(next, look.floor);
  }
}

bool TcpGroupCap::lift_for_foreign_queue(const Look& look) {
  const Duration target = cfg_.target;
  // A queue that stays although the group drains it belongs to someone else.
  // Not judged in a silence: the queue read last stands unread, and four
  // dark seconds of it once lifted the cap as if another flow held it.
  if (look.silent || cfg_.yields) {
    above_since_ = Time::never();  // a scavenger yields: the drain holds it at its floor
  } else if (queue_ > target * kForeignQueueTargets) {
    if (above_since_ == Time::never()) {
      above_since_ = look.now;
      queue_then_ = queue_;
    }
    // RTTs of the empty path: the srtt holds the very queue being judged.
    const Duration wait = std::max(kForeignQueueTime, base_ * kForeignQueueRtts);
    if (look.now - above_since_ >= wait && queue_ < queue_then_ * kOwnQueueShrinks) {
      // Shrinking: ours. Judge the next stretch from here.
      above_since_ = look.now;
      queue_then_ = queue_;
    } else if (look.now - above_since_ >= wait) {
      competing_ = true;
      capped_ = false;
      retry_at_ = look.now + retry_after_;
      retry_after_ = std::min(retry_after_ * 2.0, kLastRetry);
      above_since_ = Time::never();
      for (auto& [id, l] : lanes_) l.cap.reset();
      return true;
    }
  } else {
    above_since_ = Time::never();
    if (queue_ <= target) retry_after_ = kFirstRetry;
  }
  return false;
}

void TcpGroupCap::share(const Look& look, const std::vector<TcpLaneSample>& samples,
                        std::vector<TcpLaneDecision>& caps) {
  // Share R: mostly by what each lane delivers, a quarter evenly — all of
  // it evenly while room is left unused: what each delivered then says what
  // its kernel's estimate held, not what the lane could do, and a lane
  // restarted at the small share of a pause found that share and kept it.
  const double even = refilling_ ? 1.0 : kEvenShare;
  double total = 0;
  for (const auto& [id, l] : lanes_) total += l.share_rate.bytes_per_second();
  const double n = static_cast<double>(std::max<size_t>(lanes_.size(), 1));
  const Rate lane_floor = look.floor * (1.0 / n);
  // The even part goes to the lanes with data waiting: at a transfer's end
  // the scheduler leaves some lanes dry, and their even shares were wasted
  // — the rest of the group was held at what it acked, and R at 1.5 times
  // that (four lanes on 4 Mbit/s fell to 1.4 Mbit/s for their last 4 s).
  size_t waiting = 0;
  for (const auto& s : samples) waiting += !s.app_limited;
  for (size_t i = 0; i < samples.size(); ++i) {
    Lane& l = lanes_.at(samples[i].lane);
    const bool gets_even = waiting == 0 || !samples[i].app_limited;
    const double even_part = gets_even ? even / static_cast<double>(waiting == 0 ? samples.size() : waiting) : 0.0;
    const double share =
        total > 0 ? (1 - even) * l.share_rate.bytes_per_second() / total + even_part : (gets_even ? even_part / even : 0.0);
    l.cap = std::max(rate_ * share, lane_floor);
    caps[i].cap = l.cap;
    // A kernel that stays well below its cap with data waiting starts over.
    const TcpLaneSample& s = samples[i];
    const bool behind = !s.app_limited && ((!s.pacing.is_zero() && s.pacing < *l.cap * kLaggingPace) ||
                                           l.share_rate < *l.cap * kLaggingPace);
    const bool may_restart = l.restarted_at == Time::never() || look.now - l.restarted_at >= kRestartSpacing;
    if (refilling_ && behind && may_restart) {
      caps[i].restart = true;
      l.restarted_at = look.now;
      l.lagging_since = Time::never();
      continue;
    }
    if (!look.silent && !s.app_limited && !s.pacing.is_zero() && s.pacing < *l.cap * kLaggingPace) {
      if (l.lagging_since == Time::never()) l.lagging_since = look.now;
      if (look.now - l.lagging_since >= std::max(kLaggingTime, base_ * kLaggingRtts)) {
        caps[i].restart = true;
        l.restarted_at = look.now;
        l.lagging_since = Time::never();
      }
    } else {
      l.lagging_since = Time::never();
    }
  }
}

std::vector<TcpLaneDecision> TcpGroupCap::on_samples(Time now, const std::vector<TcpLaneSample>& samples) {
  std::vector<TcpLaneDecision> caps(samples.size());
  if (last_ != Time::never() && now <= last_) {
    for (size_t i = 0; i < samples.size(); ++i)
      if (auto it = lanes_.find(samples[i].lane); it != lanes_.end()) caps[i].cap = it->second.cap;
    return caps;
  }
  last_ = now;

  const Look look = read_lanes(now, samples);
  update_room(look);
  // Uncapped this round (the kernels start, or another flow holds the
  // queue): no decisions beyond the defaults. A cap engaged this round
  // starts at the rate engage() gives it: it is steered from the next.
  if (!capped_ || competing_) {
    if (!engage(look)) return caps;
  } else {
    steer(look);
  }
  if (lift_for_foreign_queue(look)) return caps;
  share(look, samples, caps);
  return caps;
}

}  // namespace braid::transport
