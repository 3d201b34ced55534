#include "engine/transfer/progress_line.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace braid::transfer {

ProgressLine::ProgressLine() : tty_(::isatty(STDERR_FILENO) == 1) {}

namespace {
std::string human_rate(double bps) {
  char buf[32];
  if (bps >= 1e9) std::snprintf(buf, sizeof buf, "%.2f GB/s", bps / 1e9);
  else if (bps >= 1e6) std::snprintf(buf, sizeof buf, "%.1f MB/s", bps / 1e6);
  else std::snprintf(buf, sizeof buf, "%.0f kB/s", bps / 1e3);
  return buf;
}
}  // namespace

void ProgressLine::draw(const Snapshot& s, bool final) {
  if (!tty_) return;
  const double frac = s.total ? static_cast<double>(s.done) / static_cast<double>(s.total) : 1.0;
  const int width = 24;
  const int filled = static_cast<int>(frac * width);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  const uint64_t sent = s.done - std::min(s.done, s.resumed);
  const double rate = s.elapsed > 0 ? static_cast<double>(sent) / s.elapsed : 0;
  const double eta = rate > 0 ? static_cast<double>(s.total - s.done) / rate : 0;
  std::string line = "\r[" + bar + "] " + std::to_string(static_cast<int>(frac * 100)) + "% " + human_rate(rate);
  char etab[32];
  std::snprintf(etab, sizeof etab, " ETA %.0fs |", final ? 0.0 : eta);
  line += etab;
  for (const auto& l : s.lanes) {
    if (!l.alive) {
      line += " L" + std::to_string(l.id) + " closed";
      continue;
    }
    const int share = sent ? static_cast<int>(100.0 * static_cast<double>(l.bytes) / static_cast<double>(sent)) : 0;
    line += " L" + std::to_string(l.id) + " " + human_rate(l.rate) + " " + std::to_string(share) + "%";
  }
  line += "\x1b[K";
  if (final) line += "\n";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace braid::transfer
