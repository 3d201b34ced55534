// A simulated scenario: lanes (pipes with rate, RTT, jitter, loss) and timed
// events, parsed from the `braid sim` command line or a scenario file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.hpp"

namespace braid::sim {

struct LaneSpec {
  std::string name;
  Rate rate;
  Duration rtt;
  std::optional<Rate> hint;   // the scheduler's starting estimate, if configured
  Duration jitter;            // extra one-way delay, uniform in [0, jitter]
  double loss = 0;            // probability a piece never arrives
  double ack_loss = 0;        // probability an ack never arrives
  Bytes sndbuf = Bytes::mib(4);  // socket send buffer (when writes "complete")
  /// A congestion window that starts here and doubles every round trip the
  /// lane is busy, until it carries the lane's rate (a transport's slow
  /// start: TCP's is 10 packets, ~14.5 kB). Zero: full rate from the first byte.
  Bytes initial_window;
  /// The rate each piece is sent at varies uniformly within ±noise of the
  /// lane's rate (0.2: 80–120 %), drawn per piece: a real lane's rate
  /// wanders, so the estimate is never exact. Zero: always the rate.
  double rate_noise = 0;
  /// The receiver sees a piece in sealed frames of this size (the engine's
  /// are 256 KiB), so its first-to-last-byte time, sent back with each ack,
  /// misses the first frame: a piece of one frame or less shows none. Zero:
  /// the receiver sees every byte as it arrives.
  Bytes frame;
  /// A transport that retransmits on a timer (TCP): when the lane's path
  /// comes back after an outage, the lane carries data again only when its
  /// timer next fires — `rto`, 2·rto, 4·rto, … after the outage began
  /// (RFC 6298 §5.5: the timer doubles after each expiry). Linux's first
  /// RTO is about 200 ms + the RTT. Zero: the lane resumes the moment its
  /// path is back.
  Duration rto;
};

enum class EventKind { rate, down, up, gone };

struct EventSpec {
  Duration at;
  std::string lane;
  EventKind kind = EventKind::rate;
  Rate rate;  // for EventKind::rate
};

struct Scenario {
  std::string name;
  Bytes size = Bytes::mib(256);
  Bytes chunk = Bytes::mib(1);
  uint64_t seed = 1;
  std::vector<LaneSpec> lanes;
  std::vector<EventSpec> events;
};

/// Parsers return an error message on failure, empty on success.
std::string parse_lane(std::string_view spec, LaneSpec& out);
std::string parse_event(std::string_view spec, EventSpec& out);
/// A scenario file: one option per line as on the command line
/// (`size 256MiB`, `lane usb:rate=19.1MB/s,rtt=2ms`, `event at=2s,...`, `# comment`).
std::string parse_scenario_file(const std::string& text, Scenario& out);
/// Reads and parses a scenario file; the error names the file.
std::string load_scenario_file(const std::string& path, Scenario& out);
/// Checks that events name existing lanes and the sizes are in range.
std::string validate(const Scenario& s);

/// The fluid bound: when the transfer would end if every lane delivered at its
/// full rate whenever it is up, with no round trips and perfect splitting.
/// Accounts for rate changes, outages and lanes gone for good.
Duration fluid_bound(const Scenario& s);
/// The same for one lane alone.
Duration fluid_bound_single(const Scenario& s, size_t lane);

}  // namespace braid::sim
