// One encrypted UDP lane over loopback at full speed: a sender and a
// receiver lane in one process (an I/O thread each, so the two cores of the
// build machine are both used), a random in-memory "file", 1 MiB pieces
// kept in flight the way the engine's scheduler would. Prints the rate of
// file data acked, plus the counters that explain it.
//
//   udp_lane_bench [--bytes N_MiB] [--packet-size 1200..9000] [--cc NAME]
//                  [--no-gso] [--no-gro] [--rate-limit MBIT] [--io-reaction-us N]
//                  [--burst-us N] [--v6] [--shared-port]
//
// --shared-port: the receiving lane on a shared UdpRecvPort (unconnected
// socket, demultiplexed, feedback with a destination per message) as
// `braid recv` runs it, instead of a port of its own.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "loopback_pair.hpp"

using namespace braid;
using namespace braid::udp;

namespace {
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
}  // namespace

int main(int argc, char** argv) {
  size_t mib = 1024;
  bool shared = false;
  UdpLaneConfig s = test::base_config("127.0.0.1:0");
  UdpLaneConfig r = test::base_config("127.0.0.1:0");
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--bytes") mib = std::stoul(next());
    else if (a == "--packet-size") s.packet_size = r.packet_size = std::stoul(next());
    else if (a == "--cc") s.cc = next();
    else if (a == "--no-gso") s.socket.gso = r.socket.gso = false;
    else if (a == "--no-gro") s.socket.gro = r.socket.gro = false;
    else if (a == "--rate-limit") s.rate_limit = Rate::mbit(std::stod(next()));
    else if (a == "--io-reaction-us") s.io_reaction = Duration::micros(std::stol(next()));
    else if (a == "--burst-us") s.pacer_burst = Duration::micros(std::stol(next()));
    else if (a == "--shared-port") shared = true;
    else if (a == "--v6") {
      s.local = *SocketAddress::parse("[::1]:0");
      r.local = s.local;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  test::LoopbackPair pair(mib << 20, 1 << 20);
  std::shared_ptr<UdpRecvPort> port;
  if (shared) {
    std::string error;
    port = UdpRecvPort::open(r.local, r.socket, error);
    if (!port) {
      std::fprintf(stderr, "cannot open the shared port: %s\n", error.c_str());
      return 1;
    }
  }
  if (!pair.start_on(port, s, r)) {
    std::fprintf(stderr, "cannot start: %s\n", pair.error().c_str());
    return 1;
  }
  std::fprintf(stderr, "sending\n");  // setup done (a profiler may attach from here)
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  pair.send_all();
  if (!pair.wait_acked(pair.piece_count(), std::chrono::seconds(120))) {
    std::fprintf(stderr, "transfer did not finish (%zu of %zu pieces)\n", pair.acked().size(), pair.piece_count());
    return 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  const auto c = pair.stop();
  const bool same = pair.identical();
  const double gbit = static_cast<double>(mib << 20) * 8 / secs / 1e9;
  // What one core can move: file bits over the CPU time of the busier lane
  // thread. On a shared machine wall-clock rate depends on who else runs;
  // this does not.
  const double per_core =
      static_cast<double>(mib << 20) * 8 / std::max(c.send.io_thread_cpu_seconds, c.recv.io_thread_cpu_seconds) / 1e9;
  std::printf(
      "{\"gbit_per_s\": %.3f, \"seconds\": %.3f, \"cpu_seconds\": %.3f, \"mib\": %zu, \"packet_size\": %zu, "
      "\"cc\": \"%s\", \"identical\": %s, \"gso\": %s, \"gro\": %s, \"packets_sent\": %llu, \"packets_lost\": %llu, "
      "\"packets_retransmitted\": %llu, \"srtt_ms\": %.3f, \"min_rtt_ms\": %.3f, \"send_calls\": %llu, "
      "\"gso_messages\": %llu, \"recv_calls\": %llu, \"gro_messages\": %llu, \"feedback_packets\": %llu, "
      "\"sender_cpu_s\": %.3f, \"receiver_cpu_s\": %.3f, \"gbit_per_busiest_core_s\": %.3f, \"shared_port\": %s}\n",
      gbit, secs, cpu, mib, s.packet_size, s.cc.c_str(), same ? "true" : "false", c.send.gso ? "true" : "false",
      c.recv.gro ? "true" : "false", static_cast<unsigned long long>(c.send.packets_sent),
      static_cast<unsigned long long>(c.send.packets_lost), static_cast<unsigned long long>(c.send.packets_retransmitted),
      c.send.srtt_ms, c.send.min_rtt_ms, static_cast<unsigned long long>(c.send.socket.send_calls),
      static_cast<unsigned long long>(c.send.socket.gso_messages), static_cast<unsigned long long>(c.recv.socket.recv_calls),
      static_cast<unsigned long long>(c.recv.socket.gro_messages),
      static_cast<unsigned long long>(c.recv.feedback_packets_sent), c.send.io_thread_cpu_seconds,
      c.recv.io_thread_cpu_seconds, per_core, shared ? "true" : "false");
  return same ? 0 : 1;
}
