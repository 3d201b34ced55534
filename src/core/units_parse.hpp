// Human-readable units for the command line and scenario files.
//   sizes:     B, KB/MB/GB (decimal), KiB/MiB/GiB (binary)      e.g. 256MiB
//   rates:     bit/s, kbit/s, Mbit/s, Gbit/s (also "Mbit", "Mbps") and
//              B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s               e.g. 19.1MB/s
//   durations: s, ms, us                                         e.g. 40ms
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/units.hpp"

namespace braid {

/// nullopt for text that is not a value in these units, and for sizes and
/// durations of 2^63 bytes or nanoseconds or more, or rates that overflow.
std::optional<Bytes> parse_size(std::string_view text);
std::optional<Rate> parse_rate(std::string_view text);
std::optional<Duration> parse_duration(std::string_view text);

/// Figures for people, the unit chosen by magnitude so that a small
/// transfer never reads "0.0 MiB in 0.00 s" (exact figures stay in --json):
///   sizes      "512 B", "4.0 KiB", "62.9 MiB", "1.25 GiB", "2.00 TiB" (binary)
///   rates      "800 bit/s", "12.5 kbit/s", "152.8 Mbit/s", "1.21 Gbit/s"
///   durations  "850 us", "12 ms", "4.52 s", "1 min 05 s", "2 h 03 min"
/// Every unit braid prints for people comes from these (one helper, one style).
std::string format_rate(Rate r);
std::string format_size(Bytes b);
std::string format_duration(Duration d);

}  // namespace braid
