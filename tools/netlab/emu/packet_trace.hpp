// A packet trace: one line per frame as it enters a link and as it leaves
// it, with the TCP or UDP header fields that explain a transfer's timing.
// This machine has no tcpdump; the emulator sees every packet anyway, at the
// two moments that matter (offered to the bottleneck, handed over after it).
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

#include "model/units.hpp"

namespace netlab {

/// What a trace line says about one frame (a virtio_net_hdr, then IP).
struct PacketSummary {
  std::uint8_t protocol = 0;  // 6 TCP, 17 UDP, 0 not parsed
  std::uint16_t src_port = 0, dst_port = 0;
  std::uint32_t seq = 0, ack = 0;  // TCP only
  std::uint32_t payload = 0;       // bytes after the transport header (all segments of a super-packet)
  std::uint8_t tcp_flags = 0;
};

PacketSummary summarize_packet(std::span<const std::byte> frame);

/// "TIME_US EVENT LINK DIR PROTO SPORT DPORT SEQ ACK LEN FLAGS": TIME_US
/// since the emulator started, EVENT `i` (read from the device it entered
/// by) or `o` (written to the other side), DIR up or down, FLAGS as tcpdump
/// prints them (F S R P . U E W).
std::string trace_line(std::int64_t time_us, char event, std::size_t link, bool up, const PacketSummary& s);

/// Appends trace lines to a file, buffered; closed (and flushed) on destruction.
class PacketTrace {
 public:
  PacketTrace() = default;
  PacketTrace(const PacketTrace&) = delete;
  PacketTrace& operator=(const PacketTrace&) = delete;
  ~PacketTrace();
  /// Opens `path` for writing; false (and `error()`) when it cannot.
  bool open(const std::string& path);
  bool enabled() const { return file_ != nullptr; }
  /// The first line: what the times count from, on the wall clock.
  void header(double start_unix_seconds);
  void record(TimePoint t, char event, std::size_t link, bool up, std::span<const std::byte> frame);
  void flush();
  const std::string& error() const { return error_; }

 private:
  std::FILE* file_ = nullptr;
  std::string error_;
};

}  // namespace netlab
