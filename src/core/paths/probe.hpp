// `braid probe`: what each path can do, worked out from what the engine
// sampled while a discard transfer ran over it (pure: no sockets or clocks;
// the engine samples, this reads the samples).
//
// The recipe is the source documents' (seed 003): measure each link alone
// before tuning, then all of them together; capacity from what the receiver
// acknowledged, the round trip idle (the connection's handshake) and under
// load (the same connections while they send as fast as the path takes),
// the difference being the queue a transfer would add; loss from the
// sender's retransmissions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace braid::paths {

/// One sample of a probe phase, every path's counters since the phase began
/// (bytes the receiver's TCP acknowledged, segments sent and sent again),
/// and each path's smoothed RTT now (< 0: no lane of it carries the phase).
struct ProbeTick {
  double t = 0;  // seconds since the phase's first piece
  std::vector<uint64_t> acked;
  std::vector<uint64_t> retrans;
  std::vector<uint64_t> segs_out;
  std::vector<double> srtt_ms;
};

/// What one phase showed for one path.
struct PathFigures {
  double rate_bps = 0;          // bytes per second acknowledged, after the ramp
  double rtt_loaded_p50_ms = -1;
  double rtt_loaded_p95_ms = -1;
  double loss = 0;              // retransmitted / sent segments
  uint64_t bytes = 0;           // acknowledged during the whole phase
};

/// The phase's figures for path `path`: the rate over the samples after
/// `ramp` seconds (TCP's start-up is not the path's capacity; if the phase
/// is shorter, over all of it), the RTT percentiles over the same samples.
PathFigures phase_figures(const std::vector<ProbeTick>& ticks, size_t path, double ramp);

/// Everything the probe learned about one path.
struct ProbedPath {
  std::string name;  // "eth1 -> 10.0.0.2"
  std::optional<double> idle_rtt_ms;
  PathFigures alone;     // in the phase where it ran alone
  PathFigures together;  // in the phase where every path ran
  double added_delay_p50_ms() const;  // loaded p50 - idle; < 0: unknown
  double added_delay_p95_ms() const;
};

/// The paths braid would leave idle for a transfer: those whose share of
/// the bytes in the prediction is under `min_share` (a slow path whose
/// first piece would land after the others finish).
std::vector<std::string> idle_paths(const std::vector<std::string>& names, const std::vector<uint64_t>& predicted_bytes,
                                    double min_share = 0.005);

}  // namespace braid::paths
