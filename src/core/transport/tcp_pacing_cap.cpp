#include "core/transport/tcp_pacing_cap.hpp"

#include <algorithm>
#include <cmath>

namespace braid::transport {

namespace {
using namespace ledbat;
// Our choice: one update never acts for more than two RTTs, so a long gap
// between samples (a descheduled engine thread) cannot swing the cap by more
// than 4× at once. On paths with RTTs below the sampling interval this also
// means the cap moves per sample rather than per RTT.
constexpr double kMaxRttsPerUpdate = 2.0;
// The cap stays within a factor of the acked rate (RFC 6817 §2.4.2: never
// beyond what is in flight plus growth). A window limits itself once the
// link is full (more window is only more queue, at the same rate); a rate
// does not — a cap above the bottleneck grows the queue every millisecond
// until the delay signal, an RTT or more late, arrives. So outside slow
// start the cap may run only 1.25× ahead of what is acked (BBR's probing
// gain), and in slow start 2× (it doubles per RTT).
constexpr double kHeadroom = 1.25;
constexpr double kSlowStartHeadroom = 2.0;
// ...ahead of the larger of the acked rates over the last RTT and over the
// last 10 RTTs (BBR's bandwidth-filter window). The last RTT's alone: when
// acks pause for an RTT (a receiver or, on netlab, the user-space emulator
// descheduled; a delay spike) it is near zero, and the cap fell to its floor
// with no queue at all — then took a restart and a new start-up to come
// back. The largest per-RTT rate of 10 RTTs instead: on netlab acks arrive
// in bursts (198 segments in one ACK after a 30 ms pause), per-RTT rates
// of 1.06× the link, and two lanes' caps summed to 1.4× the link.
constexpr double kHeadroomWindowRtts = 10;
// The largest rate seen (the path's rate, for the growth that fades near it
// and the end of a slow start after a restart) is measured over 2 RTTs: one
// RTT's rate includes bursts of compressed acks (1.06× the link per lane on
// netlab), 10 RTTs' never reaches the link while the cap saws below it.
constexpr double kMaxRateRtts = 2;
// The kernel's srtt is already smoothed (1/8 per ack): the current delay is
// the minimum of the last 2 samples (20 ms at the engine's 10 ms), not
// RFC 6817's 4 per-ack samples, which would add 30 ms of lag.
constexpr size_t kCurrentFilter = 2;
// A receiver delays its ACK of a lone segment until a second one arrives or
// its timer (Linux: 40 ms at first, TCP_DELACK_MIN) fires, and the kernel's
// RTT sample is taken from the first segment an ACK covers. A sender paced
// down to a few segments per RTT sends them one by one (bbr below 1.2 Mbit/s
// asks for 1-segment TSO bursts), so each RTT sample carries up to one
// inter-segment gap of ACK delay: at 2 MSS per RTT the srtt doubles and
// looks like a queue of one base RTT — measured on netlab, 20 ms of phantom
// queue that kept the cap at its floor long after the competitor had left.
// The delay sample is therefore the srtt minus min(MSS / cap, 44 ms):
// nothing at full rate, the gap at the floor. Where segments go out in
// pairs (cubic's 2-segment bursts) this underestimates the queue by that
// gap, which still leaves a competitor's standing queue well above target.
// 44 ms: the timer fires on the kernel tick after 40 ms, 40-44 ms at
// HZ=250 (Debian's and netlab's kernels; 40-50 at HZ=100, 40-41 at 1000).
// With 40 the samples at the floor read 0-4 ms of queue, above target/4 as
// often as not, and the 8 quiet RTTs a restart needs came late.
// (kDelayedAckMax, in the header: TcpGroupCap allows for the same wait.)
// Our choice: a slow start after a restart ends once the acked rate is back
// at 0.9 of the largest rate acked so far; above that LEDBAT's own growth
// (fading near that rate) takes over.
constexpr double kSlowStartExitRate = 0.9;
// Near or past the largest rate acked so far the quiet-queue growth fades,
// but not below this share of it (1.05× per RTT while the queue stays
// nearly empty): that rate is only as good as the start-up that measured
// it, and a start-up that met the queue before two RTTs at full rate (40 ms
// paths at 500 Mbit/s) left it at ~0.75 of the link — the cap then crept up
// by LEDBAT's one packet per RTT per RTT, 0.7 Mbit/s per 100 ms there. An
// empty queue says the link has room; the delay signal stops the probe an
// RTT or two after it fills (5 % of a BDP at most).
constexpr double kMaxProbeRoom = 0.1;
}  // namespace

Duration latest_rtt_sample(const TcpSample& prev, const TcpSample& s, Bytes mss) {
  // The kernel's srtt moves 1/8 of the way to each RTT sample (RFC 6298).
  // With k ACKs since the last look, the latest sample was about
  // srtt_old + Δsrtt / (1 − (7/8)^k): at full rate (k large) that is srtt
  // itself, at a few segments per RTT it undoes a smoothing that otherwise
  // took ~2 s to show a drained queue on netlab (and so held the cap at its
  // floor that long after the competitor left). k is the ACKs received
  // (tcpi_segs_in); without that count, the segments acked bound it from
  // above — but a receiver ACKs every second segment, and counting
  // segments left half of a drained queue's srtt in the samples (read as
  // a queue of 20-30 ms, it ended the slow start after a restart).
  if (s.bytes_acked <= prev.bytes_acked || prev.srtt.ns() <= 0 || s.srtt.ns() <= 0 || mss.count() == 0)
    return s.srtt;
  const double segments = static_cast<double>(s.bytes_acked - prev.bytes_acked) / mss.as_double();
  const uint32_t acks = s.segs_in - prev.segs_in;  // wraps as the kernel's counter does
  const double k = std::max(1.0, s.segs_in != 0 && prev.segs_in != 0 && acks > 0
                                     ? std::min(static_cast<double>(acks), std::max(segments, 1.0))
                                     : segments);
  const double moved = 1.0 - std::pow(7.0 / 8.0, k);
  return std::max(prev.srtt + (s.srtt - prev.srtt) / moved, kMinTcpRtt);
}

TcpPacingCap::TcpPacingCap(const TcpPacingCapConfig& cfg) : cfg_(cfg), delays_(kCurrentFilter) {}

Rate TcpPacingCap::floor() const {
  return Rate::over(Bytes(kMinPackets * mss_.count()), std::max(srtt_, kMinTcpRtt));
}

Rate TcpPacingCap::rate_since(const TcpSample& s, Time since) const {
  // The newest point at or before `since` (else the oldest kept).
  const Point* from = nullptr;
  for (size_t i = 1; i < history_count_; ++i) {
    const Point& p = history_[(history_next_ + kHistory - 1 - i) % kHistory];
    from = &p;
    if (p.t <= since) break;
  }
  if (!from) return Rate();
  return Rate::over(Bytes(s.bytes_acked - std::min(s.bytes_acked, from->acked)), s.now - from->t);
}

void TcpPacingCap::update_acked_rate(const TcpSample& s) {
  history_[history_next_] = {s.now, s.bytes_acked, capped_ ? cap_ : Rate()};
  history_next_ = (history_next_ + 1) % kHistory;
  history_count_ = std::min(history_count_ + 1, kHistory);
  if (history_count_ < 2) return;
  const Duration rtt = std::max(std::min(srtt_, loop_rtt_), kMinTcpRtt);
  acked_rate_ = rate_since(s, s.now - rtt);
  two_rtt_acked_rate_ = rate_since(s, s.now - rtt * kMaxRateRtts);
  long_acked_rate_ = rate_since(s, s.now - rtt * kHeadroomWindowRtts);
}

Rate TcpPacingCap::cap_as_sent(Time now) const {
  Rate slowest = cap_;
  for (size_t i = 0; i < history_count_; ++i) {
    const Point& p = history_[(history_next_ + kHistory - 1 - i) % kHistory];
    if (p.t < now - srtt_) break;
    if (!p.cap.is_zero()) slowest = std::min(slowest, p.cap);
  }
  return slowest;
}

TcpPacingDecision TcpPacingCap::on_sample(const TcpSample& s) {
  if (s.mss.count() > 0) mss_ = s.mss;
  if (started_ && s.now <= last_.now) return {cap(), false};
  if (s.srtt.ns() > 0) srtt_ = std::max(s.srtt, kMinTcpRtt);
  const bool new_acks = !started_ || s.bytes_acked > last_.bytes_acked;
  Duration latest = s.srtt;
  if (started_ && new_acks) latest = latest_rtt_sample(last_, s, mss_);
  // The RTT the control loop runs at: the latest sample where the smoothed
  // srtt still lags (after a competitor's queue has drained, ACKs of lone
  // segments move the srtt from ~120 ms to the path's 20-60 ms over a
  // second); a slow start that doubles per srtt took 0.3 s longer to refill
  // the link on netlab.
  if (new_acks && s.srtt.ns() > 0) loop_rtt_ = std::max(std::min(srtt_, latest), kMinTcpRtt);
  const bool loss = started_ && s.retransmits > last_.retransmits;
  const Duration dt = started_ ? s.now - last_.now : Duration::zero();
  started_ = true;
  last_ = s;
  update_acked_rate(s);
  // An unchanged srtt without new acks is no new sample of the path.
  if (new_acks && s.srtt.ns() > 0) {
    Duration sample = latest;
    // Only once capped (the base RTT was seen at full rate by then), and
    // never below that base: a compensated sample must not move the base.
    if (capped_ && delays_.has_sample() && cap_.bytes_per_second() > 0) {
      // The gap is the cap's (the kernel paces at it when it limits, which
      // is when the gap is long): a smooth value, where the acked rate over
      // a few ACKs of lone segments is noise of ±50 %. If the kernel sends
      // slower than the cap, the gap is longer and the queue reads high:
      // the safe side for a scavenger. It is the cap the acked segments
      // were sent under, an RTT ago: while the cap grows from its floor the
      // current one's shorter gap read as a few ms of queue, enough to keep
      // the path from ever looking quiet for the 8 RTTs a restart needs.
      const Duration ack_wait = std::min(kDelayedAckMax, cap_as_sent(s.now).transfer_time(mss_));
      sample = std::max(latest - ack_wait, delays_.base());
    }
    delays_.on_sample(s.now, sample);
    path_rtt_ = sample;
    queue_ = delays_.queuing_delay();
    if (cfg_.shared_base) {
      const Duration own = delays_.base();
      cfg_.shared_base->offer(own, s.now);
      const Duration path = std::min(own, cfg_.shared_base->base(s.now));
      queue_ = own + delays_.queuing_delay() - path;
    }
  }
  max_rate_ = std::max(max_rate_, two_rtt_acked_rate_);
  if (!delays_.has_sample()) return {cap(), false};

  const double q = queue_.to_seconds() / cfg_.target.to_seconds();  // delay in targets
  // A retransmission counts only with a queue behind it (≥ target/4): the
  // kernel's controller already answers loss in its own way, and without a
  // queue a loss is random (a lossy radio) or no loss at all (a tail-loss
  // probe fired early; seen on a busy loopback) — halving then would make a
  // background transfer collapse on exactly the paths issue 5 wants it on.
  const bool congested_loss = loss && q >= kQuietFraction;
  const double rtt = std::min(srtt_, loop_rtt_).to_seconds();
  const double rtts = std::min(dt.to_seconds() / rtt, kMaxRttsPerUpdate);
  const double step = kGain * mss_.as_double() / rtt * rtts;  // one MSS per RTT, per RTT
  TcpPacingDecision d;

  if (!capped_) {
    // The kernel's own start-up, until it meets the queue (or loses a packet).
    if (!congested_loss && q < kSlowStartExit) return {std::nullopt, false};
    capped_ = true;
    slow_start_ = false;
    cap_ = acked_rate_;
    if (congested_loss) {
      cap_ = cap_ * 0.5;
      last_decrease_ = s.now;
      decreased_ever_ = true;
    }
  } else if (congested_loss && (!decreased_ever_ || s.now - last_decrease_ > srtt_)) {
    // RFC 6817 §3.4.1: on loss, at least halve like TCP, once per RTT.
    cap_ = std::min(cap_, acked_rate_) * 0.5;
    last_decrease_ = s.now;
    decreased_ever_ = true;
    slow_start_ = false;
  } else {
    if (slow_start_ && q >= kSlowStartExit) slow_start_ = false;
    // A slow start after a restart ends where the path's rate is known: at
    // the largest rate acked so far (the link as it was before the
    // competitor came). The delay signal comes an RTT late, and doubling
    // past the known rate only fills the queue for the LEDBAT++ decrease to
    // cut the cap in half again (a 2× overshoot in the segment model).
    if (slow_start_ && !max_rate_.is_zero() && acked_rate_ >= max_rate_ * kSlowStartExitRate) slow_start_ = false;
    double next = cap_.bytes_per_second();
    if (slow_start_) {
      next *= std::pow(2.0, rtts);
      if (!max_rate_.is_zero()) next = std::min(next, std::max(max_rate_.bytes_per_second(), cap_.bytes_per_second()));
    } else if (q <= 1.0) {
      // RFC 6817 §2.4.2, in rates: + GAIN · off_target · MSS/RTT per RTT,
      // and up to 1.5× per RTT while the queue is nearly empty (ledbat.hpp)
      // — fading as the cap nears the largest rate acked so far: a rate
      // above the bottleneck is queue at once (see kHeadroom), so close to
      // the known rate only LEDBAT's small step probes (as BIC/CUBIC slow
      // down near their last maximum).
      if (q < kQuietFraction) {
        const double room = max_rate_.is_zero()
                                ? 1.0
                                : std::clamp(1.0 - next / max_rate_.bytes_per_second(), kMaxProbeRoom, 1.0);
        next *= std::pow(1.0 + kQuietGrowthPerRtt * (1.0 - q / kQuietFraction) * room, rtts);
      }
      next += (1.0 - std::max(q, 0.0)) * step;
    } else {
      // LEDBAT++ §4.3: W += GAIN − W·(delay/target − 1) per RTT, at most W/2 off.
      next = next * std::pow(1.0 - std::min(q - 1.0, kMaxDecreasePerRtt), rtts) + step;
    }
    cap_ = Rate::bytes_per_sec(next);

    if (q < kQuietFraction) {
      if (quiet_since_ == Time::never()) quiet_since_ = s.now;
      // 8 RTTs of the path (without the receiver's delayed ACK, which at
      // the floor is as long as the path's RTT again).
      if (!slow_start_ && s.now - quiet_since_ >= std::min(srtt_, path_rtt_) * kQuietRtts &&
          cap_.bytes_per_second() < max_rate_.bytes_per_second() * kRestartBelowMaxFraction) {
        slow_start_ = true;
        d.restart_probe = true;
      }
    } else {
      quiet_since_ = Time::never();
    }
  }
  cap_ = std::min(cap_, std::max(std::max(acked_rate_, long_acked_rate_) * (slow_start_ ? kSlowStartHeadroom : kHeadroom),
                                 floor()));
  cap_ = std::max(cap_, floor());
  d.cap = cap_;
  return d;
}

}  // namespace braid::transport
