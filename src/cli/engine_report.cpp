#include "cli/engine_report.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/units_parse.hpp"

namespace braid::cli {
namespace {
// Figures for people (core/units_parse.hpp picks the unit); exact ones are in --json.
std::string size(uint64_t b) { return format_size(Bytes(b)); }
std::string rate(double bytes_per_sec) {
  return bytes_per_sec > 0 ? format_rate(Rate::bytes_per_sec(bytes_per_sec)) : "-";
}
std::string rtt(double ms) { return ms > 0 ? format_duration(Duration::seconds_f(ms / 1000)) : "-"; }
}  // namespace

std::string lane_table(const transfer::TransferReport& r) {
  std::string out;
  out += fmt::format("{:<5} {:<24} {:<24} {:>10} {:>7} {:>6} {:>12} {:>8} {:>6} {:>4} {:>4} {:>4}  {}\n", "lane",
                     "local", "remote", "data", "chunks", "share", "rate", "rtt", "stalls", "dup", "abnd", "rej",
                     "state");
  for (const auto& l : r.lanes) {
    out += fmt::format("{:<5} {:<24} {:<24} {:>10} {:>7} {:>5.1f}% {:>12} {:>8} {:>6} {:>4} {:>4} {:>4}  {}\n",
                       l.lane_id, l.local, l.remote, size(l.bytes), l.chunks, l.share * 100,
                       rate(l.rate_bytes_per_sec), rtt(l.rtt_ms), l.stalls, l.duplicates, l.abandoned,
                       l.rejected_frames, l.open_at_end ? "open" : "closed: " + l.close_reason);
  }
  // UDP lanes: the transport's own view (issue 5's per-lane fields), one line each.
  for (const auto& l : r.lanes) {
    if (!l.udp) continue;
    out += fmt::format("lane {} udp: {} packets sent, {} lost, {} resent; srtt {}, min rtt {}, controller rate {}\n",
                       l.lane_id, l.udp->packets_sent, l.udp->packets_lost, l.udp->packets_retransmitted,
                       rtt(l.udp->srtt_ms), rtt(l.udp->min_rtt_ms), rate(l.udp->cc_rate_bytes_per_sec));
  }
  // Per path, the interface its lanes left by (lane 0 is not bound, but
  // the routes sent it by one): what each carried, so a metered link's
  // part reads at a glance.
  struct PathSum {
    std::string name;
    uint64_t bytes = 0, wire = 0;
    size_t lanes = 0;
  };
  std::vector<PathSum> paths;
  for (const auto& l : r.lanes) {
    const std::string name = l.leaves_by.empty() ? "(unknown)" : l.leaves_by;
    auto it = std::find_if(paths.begin(), paths.end(), [&](const PathSum& p) { return p.name == name; });
    if (it == paths.end()) it = paths.insert(paths.end(), PathSum{name});
    it->bytes += l.bytes;
    it->wire += l.wire_bytes;
    ++it->lanes;
  }
  if (paths.size() > 1)
    for (const auto& p : paths)
      out += fmt::format("path {}: {} over {} {} = {}; {} written to its sockets\n", p.name, size(p.bytes), p.lanes,
                         p.lanes == 1 ? "lane" : "lanes",
                         rate(r.seconds > 0 ? static_cast<double>(p.bytes) / r.seconds : 0), size(p.wire));
  // A resumed transfer's rate is over the bytes this run sent, so say how many were not sent.
  const std::string resumed =
      r.resumed_bytes ? fmt::format(" ({} resumed from an earlier run, {} sent)", size(r.resumed_bytes),
                                    size(r.bytes - std::min(r.bytes, r.resumed_bytes)))
                      : "";
  const std::string first = r.first_byte_seconds >= 0
                                ? " (first byte acked " + format_duration(Duration::seconds_f(r.first_byte_seconds)) +
                                      " after the command)"
                                : "";
  out += fmt::format("total {}{} in {}{} = {}, {} {}, {} stalls, {} duplicates, {} abandoned, policy {}, hash {}: {}\n",
                     size(r.bytes), resumed, format_duration(Duration::seconds_f(r.seconds)), first,
                     rate(r.rate_bytes_per_sec), r.files, r.files == 1 ? "file" : "files", r.stalls, r.duplicates, r.abandoned,
                     r.policy.empty() ? "-" : r.policy, r.hash, r.verified ? "every file verified" : r.status);
  if (r.compressed_file_bytes) {
    uint64_t wire = 0;
    for (const auto& l : r.lanes) wire += l.wire_bytes;
    out += fmt::format("compression: {} of file bytes crossed as {} ({:.0f} % saved); {} on the wire in all for {} sent\n",
                       size(r.compressed_file_bytes), size(r.compressed_wire_bytes),
                       100.0 * (1.0 - static_cast<double>(r.compressed_wire_bytes) / static_cast<double>(r.compressed_file_bytes)),
                       size(wire), size(r.sent_bytes));
  }
  return out;
}

std::string sync_summary(const transfer::TransferReport& r) {
  const auto& s = r.sync;
  std::string out;
  for (const auto& line : s.plan) out += line + "\n";
  out += fmt::format("sync: {} sent whole, {} updated by delta, {} unchanged, {} skipped; {} of {} crossed as pieces, "
                     "{} reused in {} chunks, {} kept; {} {}\n",
                     s.files_sent, s.files_updated, s.files_unchanged, s.files_skipped, size(r.sent_bytes),
                     size(r.bytes), size(s.reused_bytes), s.reused_chunks, size(s.kept_bytes), s.extraneous,
                     s.dry_run ? "entries would be deleted (dry run: nothing changed)" : "extraneous entries (--delete)");
  return out;
}

std::string check_writable(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {  // it did not exist: it can be created; leave no empty file behind
    ::close(fd);
    ::unlink(path.c_str());
    return "";
  }
  if (errno == EEXIST) {
    const int f = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (f >= 0) {
      ::close(f);
      return "";
    }
  }
  return "cannot write '" + path + "': " + std::strerror(errno);
}

std::string write_json_file(const std::string& path, const nlohmann::json& doc) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return "cannot write '" + path + "': " + std::strerror(errno);
  f << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return f ? "" : "cannot write '" + path + "'";
}

}  // namespace braid::cli
