// Parses the text syntax of links and events (see docs/netlab.md):
//   link:  NAME[:key=value,...]   e.g.  W:rate=320Mbit,delay=3ms,loss=1%,queue=2MB
//   event: [at=T,]link=NAME|*,ACTION[,...]   e.g.  at=2s,link=U,outage=3s
// Keys may carry a direction prefix, "up." (snd->rcv) or "down." (rcv->snd);
// without one they set both directions. Errors come back as readable text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "link_params.hpp"

namespace netlab {

/// A value or the reason there is none.
template <class T>
struct Parsed {
  std::optional<T> value;
  std::string error;

  static Parsed ok(T v) { return Parsed{std::move(v), {}}; }
  static Parsed fail(std::string why) { return Parsed{std::nullopt, std::move(why)}; }
  explicit operator bool() const { return value.has_value(); }
};

// Single values. Each accepts exactly one spelling family, to avoid tc's
// "kbps means kilobytes" trap: rates are written in bit.
Parsed<Duration> parse_duration(std::string_view text);   // 0, 250us, 3ms, 1.5s
Parsed<BitRate> parse_rate(std::string_view text);        // 1.5Mbit, 320mbit, 1Gbit, unlimited
Parsed<double> parse_probability(std::string_view text);  // 0.01 or 1%
Parsed<QueueLimit> parse_queue(std::string_view text);    // 1000p, 2MB, 64KiB, 50ms
Parsed<std::uint64_t> parse_size(std::string_view text);  // 1500, 2MB, 64KiB

/// A link description. Unset keys keep the defaults of DirectionParams.
Parsed<LinkSpec> parse_link(std::string_view text);

/// One event description. A timed outage ("outage=3s") becomes two events:
/// dark at T, light again at T+3s.
Parsed<std::vector<LinkEvent>> parse_event(std::string_view text);

/// Link names become interface names ("nl-NAME", at most 15 bytes).
bool is_valid_link_name(std::string_view name);

}  // namespace netlab
