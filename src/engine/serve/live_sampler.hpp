// The dashboard's live figures: a thread asks the receiver for its running
// transfers every `period` and keeps, per transfer, a series of samples —
// each path's throughput (measured here from the bytes its lanes delivered
// between two samples, as the terminal display does) and RTT (the kernel's,
// TCP lanes). The series feed the dashboard's charts; SSE pushes each new
// sample as it is taken.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/transfer/live_display.hpp"

namespace braid::serve {

class LiveSampler {
 public:
  using Source = std::function<std::vector<transfer::LiveTransfer>()>;
  /// Samples kept per transfer (at 0.5 s: 10 minutes); an ended transfer
  /// stays `linger` more samples so a page can show its last figures.
  static constexpr size_t kMaxSamples = 1200;
  static constexpr size_t kLinger = 120;

  ~LiveSampler();
  void start(Source source, std::chrono::milliseconds period);
  /// The source without the thread: tests then call sample() with their own times.
  void set_source(Source source) { source_ = std::move(source); }
  void stop();
  /// Takes one sample now (the thread's step; tests call it directly with their own time).
  void sample(double now_seconds);

  /// Every transfer with its whole series.
  nlohmann::json snapshot() const;
  /// Every transfer with its latest sample only; `version` counts samples.
  nlohmann::json latest() const;
  uint64_t version() const;
  /// Blocks until a sample newer than `seen` or `timeout`; the version then.
  uint64_t wait_newer(uint64_t seen, std::chrono::milliseconds timeout) const;

 private:
  struct PathPoint {
    std::string path;  // "LOCAL -> REMOTE"
    size_t lanes = 0;
    double rate = 0;    // bytes/s
    double rtt_ms = 0;  // 0: unknown
  };
  struct Sample {
    double t = 0;       // seconds since the transfer began
    double window = 0;  // seconds the rates are measured over: since the sample before
    uint64_t done = 0;
    std::vector<PathPoint> paths;
  };
  struct Track {
    transfer::LiveTransfer last;
    std::deque<Sample> samples;
    std::map<std::string, uint64_t> path_bytes;  // at the last sample
    double last_at = -1;
    bool ended = false;
    size_t since_end = 0;
  };
  nlohmann::json to_json(const Track& t, bool whole) const;

  Source source_;
  std::chrono::milliseconds period_{500};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string, Track> tracks_;
  uint64_t version_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace braid::serve
