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

/// "19.1 MB/s (152.8 Mbit/s)"-style printing for reports.
std::string format_rate(Rate r);
std::string format_size(Bytes b);

}  // namespace braid
