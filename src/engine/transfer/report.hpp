// What a transfer reports (`--json FILE`, the table on the terminal, the
// tests). Every rate here comes from the receiver's acks, never from socket
// writes: a lane's delivered rate is the bytes the receiver acked on it
// divided by the time from the lane's first send of the transfer to its last ack.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace braid::transfer {

/// A UDP lane's transport counters (sending end; cumulative over the session).
struct UdpLaneReport {
  uint64_t packets_sent = 0;
  uint64_t packets_lost = 0;
  uint64_t packets_retransmitted = 0;
  uint64_t bytes_retransmitted = 0;
  double srtt_ms = 0;
  double min_rtt_ms = 0;
  double cc_rate_bytes_per_sec = 0;  // the controller's pacing rate at the end (after --rate-limit)
  uint64_t cwnd_bytes = 0;
};

/// A TCP lane's pacing cap (its group's TcpGroupCap, or a --rate-limit
/// split's share; sending end; its state at the last 10 ms look, and
/// restarts over the session).
struct TcpPacingReport {
  std::optional<double> cap_bytes_per_sec;  // SO_MAX_PACING_RATE; nullopt: no cap (the kernel's own rate)
  double queuing_delay_ms = 0;              // the cap's queueing-delay estimate
  double srtt_ms = 0;                       // the kernel's (tcpi_rtt)
  double min_rtt_ms = 0;                    // the kernel's (tcpi_min_rtt)
  uint64_t kernel_pacing_bytes_per_sec = 0; // tcpi_pacing_rate: the kernel's rate, under the cap
  uint32_t segments_retransmitted = 0;      // tcpi_total_retrans
  uint32_t restarts = 0;                    // times the kernel's controller was put back into start-up
};

struct LaneReport {
  uint32_t lane_id = 0;
  std::string kind = "tcp";  // "tcp" or "udp"
  std::optional<UdpLaneReport> udp;
  std::optional<TcpPacingReport> tcp_pacing;  // TCP lanes under a pacing cap
  std::string name;
  std::string local;
  std::string remote;
  std::string interface;     // the interface it was bound to; empty: not bound
  std::string leaves_by;     // the interface its packets leave by: bound, or where the routes sent it (lane 0); empty: unknown
  uint64_t bytes = 0;        // bytes this lane delivered first (useful)
  uint64_t acked_bytes = 0;  // all bytes acked on it, duplicates included
  uint64_t wire_bytes = 0;   // bytes written to its socket in this transfer (frames, headers, tags)
  uint32_t chunks = 0;       // pieces it delivered first
  double share = 0;          // bytes / total
  double rate_bytes_per_sec = 0;      // delivered rate from acks: acked_bytes / active_seconds
  double active_seconds = 0;          // from its first piece sent to its last ack in this transfer
  double estimate_bytes_per_sec = 0;  // the scheduler's final estimate
  double rtt_ms = 0;                  // smoothed RTT from acks
  uint32_t stalls = 0;
  uint32_t duplicates = 0;
  uint32_t abandoned = 0;
  uint64_t rejected_frames = 0;  // stale/foreign/replayed frames dropped on it
  bool open_at_end = true;
  std::string close_reason;
};

/// Something not sent or not created, and why: a source the sender skipped
/// (a FIFO, a device, an unreadable file), a link the receiver did not
/// create (--links).
struct SkippedEntry {
  std::string path;
  std::string reason;
  std::string link_target;  // links only
};

/// What a sync did (docs/engine.md, "Sync"); in both ends' reports.
struct SyncReport {
  bool on = false;
  bool dry_run = false;
  uint64_t files_sent = 0;       // new on the receiver: sent whole
  uint64_t files_unchanged = 0;  // size and mtime matched: nothing sent
  uint64_t files_skipped = 0;    // --update (newer there), --ignore-existing
  uint64_t files_updated = 0;    // an older version there: only what differs sent
  uint64_t kept_bytes = 0;       // bytes of the unchanged and skipped files
  uint64_t reused_bytes = 0;     // chunks of older versions (and, resuming, of an earlier run) not sent
  uint64_t reused_chunks = 0;
  uint64_t extraneous = 0;       // --delete: entries there the source does not have
  uint64_t deleted = 0;          // recv: entries removed (a directory's contents each)
  std::vector<std::string> extraneous_listed;  // dry run: the first of them
  std::vector<std::string> plan;  // send, dry run: "send PATH", "update PATH", "unchanged PATH", …, "delete PATH"
};

struct TransferReport {
  std::string role;  // "send" or "recv"
  uint32_t transfer_id = 0;
  std::string peer;
  std::string policy;
  std::string hash;
  uint64_t chunk_size = 0;
  uint64_t files = 0;
  uint64_t bytes = 0;          // the transfer's bytes, all of them in place when verified
  uint64_t resumed_bytes = 0;  // of which held from an earlier run (not sent again)
  uint64_t resume_rejected_bytes = 0;  // send: held by the receiver but changed here (sent again)
  // recv, resume: what the journal claimed, read back from disk and hashed before the accept.
  uint64_t reverified_bytes = 0;  // matched: not sent again
  uint64_t refetched_bytes = 0;   // claimed, but the disk no longer held it so: sent again
  double resume_check_seconds = 0;
  /// recv, a transfer that did not finish: the bytes its resume journal
  /// claims (verified and durable, this run's and those held from earlier):
  /// what the next run resumes, once they read back right.
  uint64_t held_bytes = 0;
  /// recv: the most bytes of UDP lanes' pieces held in memory at once
  /// (gathering, or verified and waiting for the disk): bounded by the write
  /// backlog and the lanes' windows, whatever the network brings.
  uint64_t buffered_peak_bytes = 0;
  std::vector<SkippedEntry> skipped;  // recv: links not created (--links)
  /// The bytes that crossed as pieces this run: bytes less resumed, reused
  /// and kept ones (duplicates not counted).
  uint64_t sent_bytes = 0;
  /// Holes of sparse files (`send -S`): in `bytes`, never sent nor written.
  uint64_t hole_bytes = 0;
  /// send: file bytes that crossed in compressed frames, and the bytes
  /// those frames' data took on the wire (before sealing); the lanes'
  /// wire_bytes hold everything that was written. 0 and 0: none compressed.
  uint64_t compressed_file_bytes = 0;
  uint64_t compressed_wire_bytes = 0;
  SyncReport sync;
  double seconds = 0;
  double rate_bytes_per_sec = 0;  // (bytes - resumed_bytes) / seconds: what crossed the network
  /// send: from the start of the connect (the command, less process start)
  /// to the first piece the receiver acked; -1: none was.
  double first_byte_seconds = -1;
  bool verified = false;
  std::string status;  // "verified" or what went wrong
  std::string root_hash;
  uint32_t stalls = 0;
  uint32_t duplicates = 0;
  uint32_t abandoned = 0;
  std::vector<LaneReport> lanes;
};

/// The process's CPU time so far (getrusage, RUSAGE_SELF: every thread,
/// and the kernel's work on its behalf — socket copies, the loopback TCP
/// stack in its context, page-cache copies), for `--json`'s "cpu".
struct CpuUse {
  double user_seconds = 0;
  double sys_seconds = 0;
};
CpuUse process_cpu_use();

/// The bytes a transfer moved across its lanes (each lane's delivered-first
/// bytes: no duplicates, nothing held from an earlier run).
uint64_t moved_bytes(const TransferReport& r);

nlohmann::json to_json(const LaneReport& l);
nlohmann::json to_json(const SkippedEntry& e);
nlohmann::json to_json(const TransferReport& r);
/// {user_seconds, sys_seconds, bytes, seconds_per_gib}: the CPU this end
/// spent per GiB of `bytes` moved (null when nothing moved).
nlohmann::json to_json(const CpuUse& c, uint64_t bytes);

}  // namespace braid::transfer
