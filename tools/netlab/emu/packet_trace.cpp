#include "packet_trace.hpp"

#include <cerrno>
#include <cstring>

#include "emu/wire_size.hpp"

namespace netlab {
namespace {

std::uint32_t be(std::span<const std::byte> s, std::size_t at, int bytes) {
  std::uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | std::to_integer<std::uint32_t>(s[at + static_cast<std::size_t>(i)]);
  return v;
}

}  // namespace

PacketSummary summarize_packet(std::span<const std::byte> frame) {
  PacketSummary s;
  if (frame.size() < kVnetHeaderBytes) return s;
  const auto ip = frame.subspan(kVnetHeaderBytes);
  const IpHeader h = parse_ip_header(ip);
  const bool udp = h.protocol == 17;
  const std::size_t headers = transport_header_bytes(ip, udp);
  if (headers == 0) return s;  // neither TCP nor UDP, or cut short
  const std::size_t t = h.bytes;
  s.protocol = h.protocol;
  s.src_port = static_cast<std::uint16_t>(be(ip, t, 2));
  s.dst_port = static_cast<std::uint16_t>(be(ip, t + 2, 2));
  s.payload = static_cast<std::uint32_t>(ip.size() - headers);
  if (!udp) {
    s.seq = be(ip, t + 4, 4);
    s.ack = be(ip, t + 8, 4);
    s.tcp_flags = std::to_integer<std::uint8_t>(ip[t + 13]);
  }
  return s;
}

std::string trace_line(std::int64_t time_us, char event, std::size_t link, bool up, const PacketSummary& s) {
  char flags[9] = {};
  int n = 0;
  // tcpdump's letters, in its order: FIN SYN RST PSH, '.' for ACK, URG, ECE, CWR.
  constexpr std::pair<std::uint8_t, char> kLetters[] = {{0x01, 'F'}, {0x02, 'S'}, {0x04, 'R'}, {0x08, 'P'},
                                                        {0x10, '.'}, {0x20, 'U'}, {0x40, 'E'}, {0x80, 'W'}};
  for (const auto& [bit, letter] : kLetters)
    if (s.tcp_flags & bit) flags[n++] = letter;
  if (n == 0) flags[n++] = '-';
  const char* proto = s.protocol == 6 ? "tcp" : s.protocol == 17 ? "udp" : "other";
  char line[160];
  std::snprintf(line, sizeof line, "%lld %c %zu %s %s %u %u %u %u %u %s\n", static_cast<long long>(time_us), event,
                link, up ? "up" : "down", proto, s.src_port, s.dst_port, s.seq, s.ack, s.payload, flags);
  return line;
}

PacketTrace::~PacketTrace() {
  if (file_) std::fclose(file_);
}

bool PacketTrace::open(const std::string& path) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) {
    error_ = "cannot write the packet trace " + path + ": " + std::strerror(errno);
    return false;
  }
  // A large buffer: the trace is written from the forwarding loop, and a
  // write per packet would cost the delay accuracy it is there to explain.
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  return true;
}

void PacketTrace::flush() {
  if (file_) std::fflush(file_);
}

void PacketTrace::header(double start_unix_seconds) {
  if (file_)
    std::fprintf(file_, "# netlab-emu packet trace: TIME_US EVENT LINK DIR PROTO SPORT DPORT SEQ ACK LEN FLAGS; "
                        "TIME_US 0 is %.6f (Unix time)\n", start_unix_seconds);
}

void PacketTrace::record(TimePoint t, char event, std::size_t link, bool up, std::span<const std::byte> frame) {
  if (!file_) return;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::fputs(trace_line(us, event, link, up, summarize_packet(frame)).c_str(), file_);
}

}  // namespace netlab
