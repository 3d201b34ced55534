#include "core/transport/delay_controller.hpp"

#include <algorithm>

namespace braid::transport {

namespace {
// BBR draft-02 §5.1.1: startup pacing gain 2.77 (≈ 4·ln 2, the smallest gain
// that doubles delivery each round) and cwnd gain 2.
constexpr double kStartupPacingGain = 2.77;
constexpr double kStartupCwndGain = 2.0;
// BBR draft-02: drain gain 0.35 ≈ 1/2.885, empties startup's queue in about a round.
constexpr double kDrainPacingGain = 0.35;
// BBR draft-00 §4.3.4.3: probe at 1.25 for an RTT, drain at 0.75, then cruise
// at 1 for 6 RTTs. We cruise a random 2..8 RTTs instead (mean 5): the random
// length keeps flows that react to the same queue from probing in lockstep,
// which is what lets a smaller flow's probes win it a fair share.
constexpr double kProbeUpGain = 1.25;
constexpr double kProbeDownGain = 0.75;
constexpr int kMinCruiseRounds = 2;
constexpr int kMaxCruiseRounds = 8;
// Our tighter cap (BBR uses 2): even a wrong bandwidth estimate cannot keep
// more than half a BDP standing in the bottleneck queue.
constexpr double kProbeBwCwndGain = 1.5;
// The water mark's window cap when none is set (update_probe_bw).
constexpr Bytes kNoInflightCap(UINT64_MAX);
// The water mark's cap never goes below this many BDPs. One BDP over the
// minimum RTT starves the lane: what it has in flight also holds packets
// lost and not yet declared (~1 % of a BDP at 1 % loss) and packets
// delivered whose ack comes later than the fastest one did (batched acks,
// a few ms of host jitter). On netlab's loss1 (200 Mbit/s, 40 ms, 1 % loss)
// a cap of one BDP held the lane window-limited for half the transfer, ~1 %
// under its estimate. A tenth more stands at most 0.1 RTT in the queue.
constexpr double kWaterMarkFloorGain = 1.1;
// BBR draft §4.3.2.2: full pipe = under 25 % growth over 3 rounds.
constexpr double kFullBwGrowth = 1.25;
constexpr int kFullBwRounds = 3;
// BBR draft §4.3.5: min-RTT window 10 s, ProbeRTT lasts 200 ms; draft-02
// §5.6.1: ProbeRTT keeps half a BDP in flight (not 4 packets) to cost less.
constexpr Duration kMinRttWindow = Duration::seconds(10);
constexpr Duration kProbeRttDuration = Duration::millis(200);
constexpr double kProbeRttCwndGain = 0.5;
// BBR draft §4.3.x: never fewer than 4 packets in flight; initial window 10
// packets as RFC 9002 §7.2.
constexpr uint64_t kMinPipePackets = 4;
constexpr uint64_t kInitialWindowPackets = 10;
// Allowance for the receiver's ack clustering (BBR adds 3 send quanta).
constexpr uint64_t kAckAggregationPackets = 3;
// Before any RTT sample, assume 1 ms for the initial pacing rate (as Linux BBR).
constexpr Duration kNominalRtt = Duration::millis(1);
// A path's startup also ends when the last three RTT samples all stand a
// whole base RTT above the base — the queue startup's window gain of 2
// leaves anyway (BBR), so the pipe is full — but never below this much
// (host jitter on a LAN path with a base of 0.1 ms is not a queue).
// HyStart++'s own-queue exit (RFC 9406: base/8, 4–16 ms, per flow) was
// tried here and reverted: lanes left on a noisy rise with half the pipe.
constexpr Duration kStartupQueueFloor = Duration::millis(12);
// A start hint's share of the path's last BDP taken as the first window.
constexpr double kStartHintFraction = 0.5;
// Startup ends once the estimate is back at this share of a start hint's rate.
constexpr double kStartHintFull = 0.9;
}  // namespace

DelayController::DelayController(const ControllerConfig& cfg)
    : mss_(cfg.max_datagram_size),
      queue_target_(cfg.delay_queue_target),
      rng_state_(cfg.seed * 0x9e3779b97f4a7c15ULL + 1),
      pacing_gain_(kStartupPacingGain),
      cwnd_gain_(kStartupCwndGain),
      cwnd_(Bytes(kInitialWindowPackets * cfg.max_datagram_size.count())),
      shared_base_(cfg.shared_base),
      shared_startup_(cfg.shared_startup) {
  pacing_rate_ = Rate::over(cwnd_, kNominalRtt) * kStartupPacingGain;
  if (cfg.start && !cfg.start->rate.is_zero() && cfg.start->rtt > Duration::zero()) {
    // A known path: startup begins from half the BDP it had last time, paced
    // over the RTT it had, instead of ten packets — one round trip from full
    // rate where ten packets need log2(BDP / 10 packets) of them. Half, so
    // that a path that got slower since queues at most half its old BDP once
    // before the first acks say so (startup then grows or drains as ever).
    const double half_bdp = cfg.start->rate.bytes_per_second() * cfg.start->rtt.to_seconds() * kStartHintFraction;
    cwnd_ = std::max(cwnd_, Bytes(static_cast<uint64_t>(half_bdp)));
    hint_rate_ = cfg.start->rate;
    pacing_rate_ = Rate::over(cwnd_, cfg.start->rtt) * kStartupPacingGain;
  }
}

uint64_t DelayController::next_random() {
  // xorshift64*: deterministic per seed, good enough to spread phases.
  rng_state_ ^= rng_state_ >> 12;
  rng_state_ ^= rng_state_ << 25;
  rng_state_ ^= rng_state_ >> 27;
  return rng_state_ * 0x2545f4914f6cdd1dULL;
}

Bytes DelayController::bdp(double gain) const {
  const Rate bw = bw_filter_.best();
  const Duration rtt = std::min(min_rtt_, path_base_);
  if (bw.is_zero() || rtt == Duration::infinite()) {
    return Bytes(kInitialWindowPackets * mss_.count());
  }
  return Bytes(static_cast<uint64_t>(bw.bytes_per_second() * rtt.to_seconds() * gain));
}

void DelayController::on_packet_sent(Time, uint64_t, Bytes, Bytes) {}

void DelayController::on_congestion_event(const CongestionEvent& ev) {
  update_round(ev);
  update_model(ev);
  switch (mode_) {
    case Mode::startup:
      update_startup(ev);
      break;
    case Mode::drain:
      if (ev.in_flight <= bdp(1.0)) enter_probe_bw(ev.now);
      break;
    case Mode::probe_bw:
      update_probe_bw(ev);
      break;
    case Mode::probe_rtt:
      break;
  }
  update_probe_rtt(ev);
  update_outputs(ev);
}

void DelayController::update_round(const CongestionEvent& ev) {
  round_start_ = false;
  if (ev.acked.empty()) return;
  if (ev.rate.prior_delivered >= next_round_delivered_) {
    next_round_delivered_ = ev.total_delivered;
    ++round_count_;
    round_start_ = true;
  }
}

void DelayController::update_model(const CongestionEvent& ev) {
  bw_filter_.advance(round_count_);
  // App-limited samples only count when they raise the estimate (BBR draft §4.5.2.4).
  if (ev.rate.valid && (!ev.rate.is_app_limited || ev.rate.delivery_rate > bw_filter_.best())) {
    bw_filter_.update(round_count_, ev.rate.delivery_rate);
  }
  delay_exceeded_ = false;
  probe_delay_exceeded_ = false;
  startup_queue_exceeded_ = false;
  if (!ev.rtt.updated) return;
  // A standing queue shows in several samples in a row; one late sample (the
  // host scheduled a thread late) does not. So cruising drains only when the
  // smallest of the last few RTTs is above the mark (LEDBAT's CURRENT_FILTER,
  // RFC 6817 §3.4.2, does the same).
  recent_rtt_[recent_rtt_pos_] = ev.rtt.latest_adjusted;
  recent_rtt_pos_ = (recent_rtt_pos_ + 1) % recent_rtt_.size();
  Duration recent_min = Duration::infinite();
  for (const auto& r : recent_rtt_) recent_min = std::min(recent_min, r);
  min_rtt_expired_ = ev.now > min_rtt_stamp_ + kMinRttWindow;
  if (ev.rtt.latest <= min_rtt_ || min_rtt_expired_) {
    min_rtt_ = ev.rtt.latest;
    min_rtt_stamp_ = ev.now;
  }
  // The queue is measured against the path's base: this lane's own, or the
  // smallest any lane of the path saw (a latecomer's own includes the queue
  // the others keep standing).
  Duration base = min_rtt_;
  if (shared_base_) {
    shared_base_->offer(ev.rtt.latest, ev.now);
    base = std::min(base, shared_base_->base(ev.now));
  }
  path_base_ = base;
  delay_exceeded_ = recent_min != Duration::infinite() && recent_min > base + queue_target_;
  probe_delay_exceeded_ = ev.rtt.latest_adjusted > base + queue_target_ * 2.0;
  startup_queue_exceeded_ =
      recent_min != Duration::infinite() && recent_min > base + std::max(base, kStartupQueueFloor);
}

void DelayController::update_startup(const CongestionEvent& ev) {
  // Another lane of the path found the pipe full: its queue is ours too.
  // And with several lanes on the path, a lane's own rate keeps growing
  // (from the others' share) after the link is full, so the queue, which
  // they all see, ends the path's startup as well.
  if (shared_startup_ && (shared_startup_->pipe_full() || startup_queue_exceeded_)) filled_pipe_ = true;
  if (!filled_pipe_ && round_start_ && !ev.rate.is_app_limited) {
    const Rate bw = bw_filter_.best();
    if (!hint_rate_.is_zero() && bw >= hint_rate_ * kStartHintFull) {
      // The known path is full again: startup's usual three rounds without
      // growth would only build a queue of up to twice its BDP (and drain it).
      filled_pipe_ = true;
    } else if (bw >= full_bw_ * kFullBwGrowth) {
      full_bw_ = bw;
      full_bw_rounds_ = 0;
    } else if (++full_bw_rounds_ >= kFullBwRounds) {
      filled_pipe_ = true;
    }
  }
  if (filled_pipe_) {
    if (shared_startup_) shared_startup_->mark_pipe_full();
    mode_ = Mode::drain;
    pacing_gain_ = kDrainPacingGain;
    cwnd_gain_ = kStartupCwndGain;
    if (ev.in_flight <= bdp(1.0)) enter_probe_bw(ev.now);
  }
}

void DelayController::enter_probe_bw(Time now) {
  mode_ = Mode::probe_bw;
  cwnd_gain_ = kProbeBwCwndGain;
  // Start cruising for a random while, so flows sharing a link do not probe
  // in lockstep (BBR draft §4.3.4.4 randomises the starting phase likewise).
  set_phase(Phase::cruise, now);
}

void DelayController::set_phase(Phase phase, Time now) {
  phase_ = phase;
  phase_stamp_ = now;
  switch (phase) {
    case Phase::up:
      pacing_gain_ = kProbeUpGain;
      inflight_cap_ = kNoInflightCap;
      break;
    case Phase::down:
      pacing_gain_ = kProbeDownGain;
      break;
    case Phase::cruise:
      pacing_gain_ = 1.0;
      cruise_rounds_ = kMinCruiseRounds + static_cast<int>(next_random() % (kMaxCruiseRounds - kMinCruiseRounds + 1));
      break;
  }
}

void DelayController::update_probe_bw(const CongestionEvent& ev) {
  const Duration elapsed = ev.now - phase_stamp_;
  switch (phase_) {
    case Phase::up:
      // Probe for one min-RTT, but stop as soon as the queue we add shows up.
      if (probe_delay_exceeded_ || elapsed > min_rtt_ * 2.0 ||
          (elapsed > min_rtt_ && (!ev.lost.empty() || ev.prior_in_flight >= bdp(kProbeUpGain)))) {
        set_phase(Phase::down, ev.now);
      }
      break;
    case Phase::down:
      if (elapsed > min_rtt_ || ev.in_flight <= bdp(1.0)) set_phase(Phase::cruise, ev.now);
      break;
    case Phase::cruise:
      if (delay_exceeded_) {
        // The queue grew while cruising: the estimate is above the water mark.
        set_phase(Phase::down, ev.now);
        // The lanes of a path each keep a max-filtered estimate, and their
        // sum reads above the link when their shares shift (netlab, four
        // lanes on 4 Mbit/s: a queue of +30-60 ms for seconds, held by the
        // windows, that 0.75 × the estimate did not drain). So the window
        // shrinks too, to 3/4 of what was in flight, never under a BDP and
        // its allowance (kWaterMarkFloorGain), until the next probe up.
        const Bytes three_quarters(static_cast<uint64_t>(ev.prior_in_flight.as_double() * kProbeDownGain));
        inflight_cap_ = std::max(bdp(kWaterMarkFloorGain), three_quarters);
      } else if (elapsed > min_rtt_ * static_cast<double>(cruise_rounds_)) {
        set_phase(Phase::up, ev.now);
      }
      break;
  }
}

void DelayController::update_probe_rtt(const CongestionEvent& ev) {
  if (mode_ != Mode::probe_rtt && min_rtt_expired_ && mode_ != Mode::startup) {
    mode_before_probe_rtt_ = filled_pipe_ ? Mode::probe_bw : Mode::startup;
    mode_ = Mode::probe_rtt;
    cwnd_before_probe_rtt_ = cwnd_;
    pacing_gain_ = 1.0;
    probe_rtt_done_ = Time::never();
    probe_rtt_round_done_ = false;
  }
  min_rtt_expired_ = false;
  if (mode_ != Mode::probe_rtt) return;
  const Bytes probe_cwnd = std::max(bdp(kProbeRttCwndGain), Bytes(kMinPipePackets * mss_.count()));
  if (probe_rtt_done_ == Time::never() && ev.in_flight <= probe_cwnd) {
    probe_rtt_done_ = ev.now + kProbeRttDuration;
    probe_rtt_round_done_ = false;
    next_round_delivered_ = ev.total_delivered;
  } else if (probe_rtt_done_ != Time::never()) {
    if (round_start_) probe_rtt_round_done_ = true;
    if (probe_rtt_round_done_ && ev.now >= probe_rtt_done_) {
      min_rtt_stamp_ = ev.now;
      cwnd_ = std::max(cwnd_, cwnd_before_probe_rtt_);
      if (mode_before_probe_rtt_ == Mode::probe_bw) {
        enter_probe_bw(ev.now);
      } else {
        mode_ = Mode::startup;
        pacing_gain_ = kStartupPacingGain;
        cwnd_gain_ = kStartupCwndGain;
      }
    }
  }
}

void DelayController::update_outputs(const CongestionEvent& ev) {
  const Rate bw = bw_filter_.best();
  if (!bw.is_zero()) {
    const Rate target = bw * pacing_gain_;
    // Startup never slows down before the pipe is known to be full.
    pacing_rate_ = filled_pipe_ ? target : std::max(pacing_rate_, target);
  } else if (ev.rtt.has_sample) {
    const Rate initial = Rate::over(cwnd_, std::max(ev.rtt.smoothed, kNominalRtt)) * kStartupPacingGain;
    pacing_rate_ = initial;
  }

  const Bytes min_cwnd(kMinPipePackets * mss_.count());
  const Bytes target = bdp(cwnd_gain_) + Bytes(kAckAggregationPackets * mss_.count());
  Bytes acked;
  for (const auto& a : ev.acked) acked += a.size;
  if (filled_pipe_) {
    cwnd_ = std::min(cwnd_ + acked, target);
  } else if (cwnd_ < target || ev.total_delivered < kInitialWindowPackets * mss_.count()) {
    cwnd_ += acked;
  }
  if (mode_ == Mode::probe_bw) cwnd_ = std::min(cwnd_, inflight_cap_);
  cwnd_ = std::max(cwnd_, min_cwnd);
  if (mode_ == Mode::probe_rtt) {
    cwnd_ = std::min(cwnd_, std::max(bdp(kProbeRttCwndGain), min_cwnd));
  }
}

}  // namespace braid::transport
