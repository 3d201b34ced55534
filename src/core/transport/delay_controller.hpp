// `delay` — braid's default controller. Model-based in the spirit of BBR
// (draft-cardwell-iccrg-bbr-congestion-control): it estimates the bottleneck
// rate (windowed max of delivery-rate samples) and the path's minimum RTT,
// paces at that rate, probes 1.25× for one RTT now and then and drains after,
// and caps bytes in flight at a small multiple of the estimated BDP.
//
// What is tighter than BBR, for MISSION §3's "water mark": whenever the last
// few RTTs all stay more than `delay_queue_target` (default 3 ms) above the
// minimum, it treats the estimate as too high and drains at once — so the
// standing queue it leaves behind stays within a few milliseconds, while a
// single late sample (host jitter) costs nothing. Random loss does not
// lower the estimate (only delivered bytes do), so 1–5 % loss costs about that
// much rate and no more.
#pragma once

#include <array>
#include <cstdint>

#include "core/transport/congestion_controller.hpp"
#include "core/transport/windowed_filter.hpp"

namespace braid::transport {

class DelayController final : public CongestionController {
 public:
  enum class Mode { startup, drain, probe_bw, probe_rtt };

  explicit DelayController(const ControllerConfig& cfg);

  std::string_view id() const override { return "delay"; }
  void on_packet_sent(Time now, uint64_t packet_number, Bytes size, Bytes prior_in_flight) override;
  void on_congestion_event(const CongestionEvent& ev) override;
  Bytes congestion_window() const override { return cwnd_; }
  Rate pacing_rate() const override { return pacing_rate_; }
  Rate bandwidth_estimate() const override { return bw_filter_.best(); }

  Mode mode() const { return mode_; }
  Duration min_rtt() const { return min_rtt_; }
  uint64_t round_count() const { return round_count_; }

 private:
  Bytes bdp(double gain) const;
  void update_round(const CongestionEvent& ev);
  void update_model(const CongestionEvent& ev);
  void update_startup(const CongestionEvent& ev);
  void update_probe_bw(const CongestionEvent& ev);
  void update_probe_rtt(const CongestionEvent& ev);
  void enter_probe_bw(Time now);
  enum class Phase { up, down, cruise };
  void set_phase(Phase phase, Time now);
  void update_outputs(const CongestionEvent& ev);
  uint64_t next_random();

  Bytes mss_;
  Duration queue_target_;
  uint64_t rng_state_;

  Mode mode_ = Mode::startup;
  double pacing_gain_;
  double cwnd_gain_;
  Rate pacing_rate_;
  Bytes cwnd_;

  // Model.
  RoundMaxFilter<Rate, 10> bw_filter_;
  Duration min_rtt_ = Duration::infinite();
  Time min_rtt_stamp_;
  bool min_rtt_expired_ = false;

  // Round trips, counted in delivered data (BBR draft §4.5.1).
  uint64_t round_count_ = 0;
  uint64_t next_round_delivered_ = 0;
  bool round_start_ = false;

  // Startup: pipe full when the estimate stops growing 25 % for 3 rounds.
  Rate full_bw_;
  int full_bw_rounds_ = 0;
  bool filled_pipe_ = false;
  Rate hint_rate_;  // a start hint's rate (zero: none): startup ends when it is reached
  std::shared_ptr<SharedBaseRtt> shared_base_;  // the path's lanes' smallest RTT (ControllerConfig)
  std::shared_ptr<SharedStartup> shared_startup_;  // the path's lanes' one startup (ControllerConfig)
  // The path's base RTT as of the last sample: min_rtt_, or the smaller one
  // its lanes share. The BDP is taken over it, so that a lane that opened
  // behind its siblings' queue does not count that queue as pipe.
  Duration path_base_ = Duration::infinite();

  // ProbeBW gain cycle: up (1.25) → down (0.75) → cruise (1) for a random
  // number of RTTs → up ...
  Phase phase_ = Phase::cruise;
  int cruise_rounds_ = 0;
  Time phase_stamp_;
  bool delay_exceeded_ = false;        // the last few RTTs were all above the mark
  bool probe_delay_exceeded_ = false;  // this sample is twice the mark above (ends a probe)
  bool startup_queue_exceeded_ = false;  // the last few RTTs all stood a base RTT above the base
  Bytes inflight_cap_{UINT64_MAX};       // set by the water mark, lifted by the next probe up
  std::array<Duration, 3> recent_rtt_{Duration::infinite(), Duration::infinite(), Duration::infinite()};
  size_t recent_rtt_pos_ = 0;

  // ProbeRTT.
  Time probe_rtt_done_ = Time::never();
  bool probe_rtt_round_done_ = false;
  Mode mode_before_probe_rtt_ = Mode::probe_bw;
  Bytes cwnd_before_probe_rtt_;
};

}  // namespace braid::transport
