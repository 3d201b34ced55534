// One thread that runs jobs in the order they were posted, and knows how
// many bytes the jobs still waiting hold. The receiver gives it what must
// not run on a shared UDP port's I/O thread: verifying and writing a UDP
// lane's finished pieces, and replies over TCP lanes, which can block.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace braid::transfer {

class SerialWorker {
 public:
  /// `after_each` runs on the worker's thread after every job, with the
  /// bytes the waiting jobs still hold.
  explicit SerialWorker(std::function<void(uint64_t queued_bytes)> after_each = {});
  /// Runs what was posted, then stops (stop()).
  ~SerialWorker();
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  /// Queues `job`, which holds `bytes` of memory until it has run.
  void post(std::function<void()> job, uint64_t bytes = 0);
  /// Bytes held by jobs posted and not yet finished (lock-free: asked per datagram).
  uint64_t queued_bytes() const { return bytes_.load(); }
  /// Blocks until every job posted before this call has run.
  void drain();
  /// Runs what was posted, after_each included, and ends the thread (what is
  /// posted later never runs). For an owner whose after_each reaches the worker
  /// through the owner (as the receiver's does): stop() while that path
  /// still leads here — a unique_ptr's reset() empties itself before the
  /// destructor runs, and an after_each running then finds it null.
  void stop();

 private:
  void run();

  struct Job {
    std::function<void()> fn;
    uint64_t bytes;
  };
  std::function<void(uint64_t)> after_each_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::atomic<uint64_t> bytes_{0};
  uint64_t posted_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace braid::transfer
