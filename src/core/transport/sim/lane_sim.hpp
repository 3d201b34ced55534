// Whole UDP lanes in virtual time: senders and receivers (the production
// state machines, unchanged) share one simulated bottleneck, acks return over
// an uncongested reverse path, and an optional constant-rate flow competes.
// Deterministic for a given config: performance becomes an assertable number.
//
// The driver loop is the one the engine runs: deliver arrivals
// (on_datagram_received), fire timers (on_timeout), drain poll_transmit, then
// jump to the earliest poll_timeout or arrival.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/transport/lane_receiver.hpp"
#include "core/transport/lane_sender.hpp"
#include "core/transport/range_set.hpp"
#include "core/transport/sim/bottleneck_link.hpp"

namespace braid::transport::sim {

struct FlowSpec {
  std::string_view cc = kDefaultController;
  Time start = Time::zero();
  Time stop = Time::never();       // the flow vanishes at this time (like a killed process)
  Bytes packet_size{1200};
  Bytes total;                     // data to send; 0 = unlimited bulk
  ControllerConfig cc_config;
};

/// Constant-bit-rate traffic with no feedback (e.g. a video call).
struct CbrSpec {
  Rate rate;
  Time start = Time::zero();
  Time stop = Time::never();
  Bytes packet_size{1200};
};

struct SimConfig {
  LinkConfig link;
  Duration bin = Duration::millis(100);  // goodput is recorded per bin
  Duration queue_sample_every = Duration::millis(5);
};

class LaneSim {
 public:
  explicit LaneSim(const SimConfig& cfg);
  ~LaneSim();

  /// Adds a flow; returns its index (0, 1, ...); -1 if the controller is unknown.
  int add_flow(const FlowSpec& spec);
  /// Adds constant-rate cross traffic; returns its index among CBR flows.
  int add_cbr(const CbrSpec& spec);

  /// Runs the simulation until `end`; false if it stalled (a driver-loop bug).
  bool run_until(Time end);
  Time now() const { return now_; }

  /// Unique data bytes that reached flow `i`'s receiver in [from, to), as a rate.
  Rate goodput(int flow, Time from, Time to) const;
  uint64_t goodput_bytes(int flow) const;
  /// Datagrams a lane refused as malformed (not duplicates): none, unless
  /// the simulator hands over something the engine never would.
  uint64_t refused_datagrams() const { return refused_; }
  /// CBR bytes delivered in [from, to), as a rate.
  Rate cbr_throughput(int cbr, Time from, Time to) const;
  /// Time `flow` received its last byte (Time::never() if unfinished).
  Time completion_time(int flow) const;

  /// Extra delay a ping would have seen at the bottleneck, sampled every
  /// queue_sample_every from `from` (all samples if from = 0).
  std::vector<Duration> queue_delays(Time from, Time to) const;

  const LaneSender& sender(int flow) const;
  const LaneReceiver& receiver(int flow) const;
  const BottleneckLink& link() const { return link_; }

 private:
  struct Flow;
  struct Cbr;
  Rate binned_rate(const std::vector<uint64_t>& bins, Time from, Time to) const;
  void add_to_bin(std::vector<uint64_t>& bins, Time t, uint64_t bytes) const;
  void top_up(Flow& f);
  void drive_flow(Flow& f);
  Time next_event_time() const;
  std::vector<uint8_t> take_buffer();

  SimConfig cfg_;
  BottleneckLink link_;
  std::vector<std::unique_ptr<Flow>> flows_;
  std::vector<std::unique_ptr<Cbr>> cbrs_;
  std::vector<std::vector<uint8_t>> pool_;
  std::vector<std::pair<Time, Duration>> queue_samples_;
  Time next_sample_ = Time::zero();
  uint64_t refused_ = 0;
  Time now_ = Time::zero();
};

/// Nearest-rank percentile (0..100) of durations; zero if empty.
Duration percentile(std::vector<Duration> v, double p);

}  // namespace braid::transport::sim
