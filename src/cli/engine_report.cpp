#include "cli/engine_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace braid::cli {
namespace {
std::string mbit(double bytes_per_sec) { return fmt::format("{:.1f}", bytes_per_sec * 8 / 1e6); }
std::string mib(uint64_t b) { return fmt::format("{:.1f}", static_cast<double>(b) / (1 << 20)); }
}  // namespace

std::string lane_table(const transfer::TransferReport& r) {
  std::string out;
  out += fmt::format("{:<5} {:<24} {:<24} {:>9} {:>7} {:>6} {:>11} {:>8} {:>6} {:>4} {:>4} {:>4}  {}\n", "lane",
                     "local", "remote", "MiB", "chunks", "share", "Mbit/s", "rtt ms", "stalls", "dup", "abnd", "rej",
                     "state");
  for (const auto& l : r.lanes) {
    out += fmt::format("{:<5} {:<24} {:<24} {:>9} {:>7} {:>5.1f}% {:>11} {:>8.2f} {:>6} {:>4} {:>4} {:>4}  {}\n",
                       l.lane_id, l.local, l.remote, mib(l.bytes), l.chunks, l.share * 100, mbit(l.rate_bytes_per_sec),
                       l.rtt_ms, l.stalls, l.duplicates, l.abandoned, l.rejected_frames,
                       l.open_at_end ? "open" : "closed: " + l.close_reason);
  }
  // UDP lanes: the transport's own view (issue 5's per-lane fields), one line each.
  for (const auto& l : r.lanes) {
    if (!l.udp) continue;
    out += fmt::format("lane {} udp: {} packets sent, {} lost, {} resent; srtt {:.2f} ms, min rtt {:.3f} ms, "
                       "controller rate {} Mbit/s\n",
                       l.lane_id, l.udp->packets_sent, l.udp->packets_lost, l.udp->packets_retransmitted,
                       l.udp->srtt_ms, l.udp->min_rtt_ms, mbit(l.udp->cc_rate_bytes_per_sec));
  }
  // A resumed transfer's rate is over the bytes this run sent, so say how many were not sent.
  const std::string resumed =
      r.resumed_bytes ? fmt::format(" ({} MiB resumed from an earlier run, {} MiB sent)", mib(r.resumed_bytes),
                                    mib(r.bytes - std::min(r.bytes, r.resumed_bytes)))
                      : "";
  out += fmt::format("total {} MiB{} in {:.2f} s = {} Mbit/s ({:.1f} MB/s), {} files, {} stalls, {} duplicates, "
                     "{} abandoned, policy {}, hash {}: {}\n",
                     mib(r.bytes), resumed, r.seconds, mbit(r.rate_bytes_per_sec), r.rate_bytes_per_sec / 1e6, r.files,
                     r.stalls, r.duplicates, r.abandoned, r.policy.empty() ? "-" : r.policy, r.hash,
                     r.verified ? "every file verified" : r.status);
  return out;
}

std::string write_json_file(const std::string& path, const nlohmann::json& doc) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return "cannot write '" + path + "': " + std::strerror(errno);
  f << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return f ? "" : "cannot write '" + path + "'";
}

}  // namespace braid::cli
