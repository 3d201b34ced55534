#include "core/units_parse.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace braid {
namespace {

struct NumberAndUnit {
  double value = 0;
  std::string unit;
};

std::optional<NumberAndUnit> split(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == 'e' ||
                             ((text[i] == '-' || text[i] == '+') && i > 0 && text[i - 1] == 'e')))
    ++i;
  // "e" may begin a unit only if no digit follows; none of ours start with e.
  if (i == 0) return std::nullopt;
  const std::string num(text.substr(0, i));
  char* end = nullptr;
  const double v = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  std::string unit(text.substr(i));
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  return NumberAndUnit{v, unit};
}

// Values are whole counts of bytes or nanoseconds below 2^63: beyond,
// std::llround is unspecified and a double-to-integer cast undefined, and
// nothing braid sizes or times needs more (2^63 ns is 292 years).
constexpr double kTwoTo63 = 9223372036854775808.0;

std::optional<int64_t> whole(double v) {
  if (!(v < kTwoTo63)) return std::nullopt;
  return std::llround(v);
}

// A rate from a finite number can still overflow to infinity (1e308 Gbit/s).
std::optional<Rate> finite(Rate r) {
  if (!std::isfinite(r.bytes_per_second())) return std::nullopt;
  return r;
}

std::optional<double> size_factor(std::string_view u) {
  if (u == "" || u == "B") return 1.0;
  if (u == "KB" || u == "kB") return 1e3;
  if (u == "MB") return 1e6;
  if (u == "GB") return 1e9;
  if (u == "KiB") return 1024.0;
  if (u == "MiB") return 1024.0 * 1024;
  if (u == "GiB") return 1024.0 * 1024 * 1024;
  return std::nullopt;
}

}  // namespace

std::optional<Bytes> parse_size(std::string_view text) {
  auto nu = split(text);
  if (!nu) return std::nullopt;
  auto f = size_factor(nu->unit);
  if (!f) return std::nullopt;
  const auto n = whole(nu->value * *f);
  if (!n) return std::nullopt;
  return Bytes(static_cast<uint64_t>(*n));
}

std::optional<Rate> parse_rate(std::string_view text) {
  auto nu = split(text);
  if (!nu) return std::nullopt;
  std::string u = nu->unit;
  // Bits per second: bit/s, kbit/s, Mbit/s, Gbit/s, with "/s" or "ps" optional.
  for (const std::string suffix : {"/s", "ps"}) {
    if (u.size() > suffix.size() && u.ends_with(suffix) && u.find("bit") != std::string::npos)
      u.resize(u.size() - suffix.size());
  }
  if (u == "bit" || u == "b") return finite(Rate::bits_per_sec(nu->value));
  if (u == "kbit" || u == "Kbit" || u == "kb") return finite(Rate::bits_per_sec(nu->value * 1e3));
  if (u == "Mbit" || u == "Mb") return finite(Rate::bits_per_sec(nu->value * 1e6));
  if (u == "Gbit" || u == "Gb") return finite(Rate::bits_per_sec(nu->value * 1e9));
  if (u.ends_with("/s")) {
    auto f = size_factor(std::string_view(u).substr(0, u.size() - 2));
    if (f) return finite(Rate::bytes_per_sec(nu->value * *f));
  }
  return std::nullopt;
}

std::optional<Duration> parse_duration(std::string_view text) {
  auto nu = split(text);
  if (!nu) return std::nullopt;
  std::optional<int64_t> ns;
  if (nu->unit == "s") {
    if (!(nu->value * 1e9 < kTwoTo63)) return std::nullopt;
    return Duration::seconds_f(nu->value);
  }
  if (nu->unit == "ms") ns = whole(nu->value * 1e6);
  else if (nu->unit == "us" || nu->unit == "µs") ns = whole(nu->value * 1e3);
  else if (nu->unit == "ns") ns = whole(nu->value);
  else return std::nullopt;
  if (!ns) return std::nullopt;
  return Duration::nanos(*ns);
}

std::string format_rate(Rate r) {
  char buf[64];
  const double bits = r.bits_per_second();
  if (bits >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2f Gbit/s", bits / 1e9);
  } else if (bits >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f Mbit/s", bits / 1e6);
  } else if (bits >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.1f kbit/s", bits / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f bit/s", bits);
  }
  return buf;
}

std::string format_size(Bytes b) {
  char buf[64];
  const double v = b.as_double();
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024, kTiB = kGiB * 1024;
  if (v >= kTiB) {
    std::snprintf(buf, sizeof buf, "%.2f TiB", v / kTiB);
  } else if (v >= kGiB) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", v / kGiB);
  } else if (v >= kMiB) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", v / kMiB);
  } else if (v >= kKiB) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", v / kKiB);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", v);
  }
  return buf;
}

std::string format_duration(Duration d) {
  char buf[64];
  const double s = std::max(0.0, d.to_seconds());
  if (s < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.0f us", s * 1e6);
  } else if (s < 1) {
    std::snprintf(buf, sizeof buf, "%.0f ms", s * 1e3);
  } else if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  } else if (s < 3600) {
    const auto whole = static_cast<long>(s);
    std::snprintf(buf, sizeof buf, "%ld min %02ld s", whole / 60, whole % 60);
  } else {
    const auto minutes = static_cast<long>(s / 60);
    std::snprintf(buf, sizeof buf, "%ld h %02ld min", minutes / 60, minutes % 60);
  }
  return buf;
}

}  // namespace braid
