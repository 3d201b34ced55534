// The I/O around LabModel: a pair of TUN devices per link (one in each
// namespace), an epoll loop that reads packets into the model and writes
// them out when it says so, a timerfd for the model's next deadline, a
// signalfd for SIGUSR1 (report counters) and SIGTERM/SIGINT (stop), and an
// optional control FIFO taking event lines at run time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emu/packet_trace.hpp"
#include "emu/stats_report.hpp"
#include "emu/tun_device.hpp"
#include "model/lab_model.hpp"

namespace netlab {

struct EmulatorOptions {
  std::vector<LinkSpec> links;
  std::vector<LinkEvent> events;  // relative to the start of run()
  std::uint64_t seed = 1;
  std::string snd_netns;          // paths such as /run/netns/braid-snd
  std::string rcv_netns;
  std::string control_fifo;       // optional: event lines, or "stats"
  std::string stats_json_path;    // optional: written on SIGUSR1 and at exit
  std::string stats_text_path;    // optional: same, as text
  std::string trace_path;         // optional: a line per packet in and out (packet_trace.hpp)
  // Run at a real-time priority (SCHED_FIFO). The delay accuracy of the lab
  // is the emulator's wake-up latency, and on a busy two-core machine a
  // normal process waits milliseconds for a core. The loop always sleeps in
  // epoll_wait between bursts, so it cannot monopolise a core.
  bool realtime = true;
};

class Emulator {
 public:
  /// Creates every device. Call before starting threads or forking: devices
  /// are created by visiting the namespaces with setns().
  static std::unique_ptr<Emulator> create(const EmulatorOptions& options, std::string& error);

  /// Forwards packets until SIGTERM or SIGINT. The signals must already be
  /// blocked in the calling thread (main does this first thing). Returns the
  /// process exit code.
  int run();

 private:
  explicit Emulator(const EmulatorOptions& options);

  struct Side {          // one TUN device per link and namespace
    TunDevice snd;       // in the sender namespace: reads "up", writes "down"
    TunDevice rcv;       // in the receiver namespace: reads "down", writes "up"
    bool gso[2] = {false, false};  // offloads currently on the reading device, per Dir
  };

  TimePoint now() const;
  int ingress_fd(std::size_t link, Dir dir) const;
  int egress_fd(std::size_t link, Dir dir) const;
  void read_frames(std::size_t link, Dir dir, TimePoint now);
  void deliver_due(TimePoint now);
  void sync_gso();
  void read_control(TimePoint now);
  void handle_control_line(const std::string& line, TimePoint now);
  void report();
  void arm_timer();

  EmulatorOptions options_;
  LabModel lab_;
  std::vector<Side> sides_;
  std::vector<IoCounters> io_;
  std::vector<std::byte> scratch_;
  PacketTrace trace_;
  std::uint64_t report_seq_ = 0;
  std::int64_t start_ns_ = 0;  // CLOCK_MONOTONIC at t = 0

  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  int signal_fd_ = -1;
  int control_fd_ = -1;
  std::string control_buffer_;
  std::optional<TimePoint> armed_;
};

}  // namespace netlab
