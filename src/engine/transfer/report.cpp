#include "engine/transfer/report.hpp"

#include <sys/resource.h>

namespace braid::transfer {

CpuUse process_cpu_use() {
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return {};
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return {seconds(u.ru_utime), seconds(u.ru_stime)};
}

uint64_t moved_bytes(const TransferReport& r) {
  uint64_t n = 0;
  for (const auto& l : r.lanes) n += l.bytes;
  return n;
}

nlohmann::json to_json(const CpuUse& c, uint64_t bytes) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  const double total = c.user_seconds + c.sys_seconds;
  return {{"user_seconds", c.user_seconds},
          {"sys_seconds", c.sys_seconds},
          {"bytes", bytes},
          {"seconds_per_gib", bytes ? nlohmann::json(total / (static_cast<double>(bytes) / kGiB)) : nlohmann::json(nullptr)}};
}

nlohmann::json to_json(const LaneReport& l) {
  nlohmann::json j = {{"lane_id", l.lane_id},
          {"kind", l.kind},
          {"name", l.name},
          {"local", l.local},
          {"remote", l.remote},
          {"bytes", l.bytes},
          {"acked_bytes", l.acked_bytes},
          {"wire_bytes", l.wire_bytes},
          {"chunks", l.chunks},
          {"share", l.share},
          {"rate_bytes_per_sec", l.rate_bytes_per_sec},
          {"rate_mbit_per_sec", l.rate_bytes_per_sec * 8 / 1e6},
          {"active_seconds", l.active_seconds},
          {"estimate_bytes_per_sec", l.estimate_bytes_per_sec},
          {"rtt_ms", l.rtt_ms},
          {"stalls", l.stalls},
          {"duplicates", l.duplicates},
          {"abandoned", l.abandoned},
          {"rejected_frames", l.rejected_frames},
          {"open_at_end", l.open_at_end},
          {"close_reason", l.close_reason}};
  if (!l.interface.empty()) j["interface"] = l.interface;
  if (!l.leaves_by.empty()) j["leaves_by"] = l.leaves_by;
  if (l.udp) {
    j["packets_sent"] = l.udp->packets_sent;
    j["packets_lost"] = l.udp->packets_lost;
    j["packets_retransmitted"] = l.udp->packets_retransmitted;
    j["bytes_retransmitted"] = l.udp->bytes_retransmitted;
    j["srtt_ms"] = l.udp->srtt_ms;
    j["min_rtt_ms"] = l.udp->min_rtt_ms;
    j["cc_rate_bytes_per_sec"] = l.udp->cc_rate_bytes_per_sec;
    j["cc_rate_mbit_per_sec"] = l.udp->cc_rate_bytes_per_sec * 8 / 1e6;
    j["cwnd_bytes"] = l.udp->cwnd_bytes;
  }
  if (l.tcp_pacing) {
    const auto& p = *l.tcp_pacing;
    j["pacing_cap_bytes_per_sec"] = p.cap_bytes_per_sec ? nlohmann::json(*p.cap_bytes_per_sec) : nlohmann::json(nullptr);
    j["pacing_cap_mbit_per_sec"] =
        p.cap_bytes_per_sec ? nlohmann::json(*p.cap_bytes_per_sec * 8 / 1e6) : nlohmann::json(nullptr);
    j["pacing_restarts"] = p.restarts;
    j["queuing_delay_ms"] = p.queuing_delay_ms;
    j["srtt_ms"] = p.srtt_ms;
    j["min_rtt_ms"] = p.min_rtt_ms;
    j["kernel_pacing_bytes_per_sec"] = p.kernel_pacing_bytes_per_sec;
    j["segments_retransmitted"] = p.segments_retransmitted;
  }
  return j;
}

nlohmann::json to_json(const SkippedEntry& e) {
  nlohmann::json j = {{"path", e.path}, {"reason", e.reason}};
  if (!e.link_target.empty()) j["link_target"] = e.link_target;
  return j;
}

nlohmann::json to_json(const SyncReport& s) {
  nlohmann::json j = {{"dry_run", s.dry_run},
                      {"files_sent", s.files_sent},
                      {"files_unchanged", s.files_unchanged},
                      {"files_skipped", s.files_skipped},
                      {"files_updated", s.files_updated},
                      {"kept_bytes", s.kept_bytes},
                      {"reused_bytes", s.reused_bytes},
                      {"reused_chunks", s.reused_chunks},
                      {"extraneous", s.extraneous},
                      {"deleted", s.deleted}};
  if (s.dry_run) j["plan"] = s.plan;
  return j;
}

/// Everything the lanes wrote for the transfer (pieces, compressed or not,
/// with their headers and tags, and messages).
static uint64_t wire_bytes(const TransferReport& r) {
  uint64_t n = 0;
  for (const auto& l : r.lanes) n += l.wire_bytes;
  return n;
}

nlohmann::json to_json(const TransferReport& r) {
  nlohmann::json lanes = nlohmann::json::array();
  for (const auto& l : r.lanes) lanes.push_back(to_json(l));
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& e : r.skipped) skipped.push_back(to_json(e));
  nlohmann::json j = {{"role", r.role},
          {"transfer_id", r.transfer_id},
          {"peer", r.peer},
          {"policy", r.policy},
          {"hash", r.hash},
          {"chunk_size", r.chunk_size},
          {"files", r.files},
          {"bytes", r.bytes},
          {"resumed_bytes", r.resumed_bytes},
          {"resume_rejected_bytes", r.resume_rejected_bytes},
          {"reverified_bytes", r.reverified_bytes},
          {"refetched_bytes", r.refetched_bytes},
          {"resume_check_seconds", r.resume_check_seconds},
          {"held_bytes", r.held_bytes},
          {"buffered_peak_bytes", r.buffered_peak_bytes},
          {"skipped", skipped},
          {"seconds", r.seconds},
          {"rate_bytes_per_sec", r.rate_bytes_per_sec},
          {"rate_mbit_per_sec", r.rate_bytes_per_sec * 8 / 1e6},
          {"first_byte_seconds", r.first_byte_seconds},
          {"verified", r.verified},
          {"status", r.status},
          {"root_hash", r.root_hash},
          {"stalls", r.stalls},
          {"duplicates", r.duplicates},
          {"abandoned", r.abandoned},
          {"sent_bytes", r.sent_bytes},
          {"hole_bytes", r.hole_bytes},
          {"compressed_file_bytes", r.compressed_file_bytes},
          {"compressed_wire_bytes", r.compressed_wire_bytes},
          {"wire_bytes", wire_bytes(r)},
          {"lanes", lanes}};
  if (r.sync.on) j["sync"] = to_json(r.sync);
  return j;
}

}  // namespace braid::transfer
