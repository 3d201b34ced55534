#include "engine/transfer/serial_worker.hpp"

namespace braid::transfer {

SerialWorker::SerialWorker(std::function<void(uint64_t)> after_each)
    : after_each_(std::move(after_each)), thread_([this] { run(); }) {}

SerialWorker::~SerialWorker() { stop(); }

void SerialWorker::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SerialWorker::post(std::function<void()> job, uint64_t bytes) {
  {
    std::lock_guard lock(mu_);
    jobs_.push_back(Job{std::move(job), bytes});
    bytes_ += bytes;
    ++posted_;
  }
  cv_.notify_all();
}

void SerialWorker::drain() {
  std::unique_lock lock(mu_);
  const uint64_t target = posted_;
  cv_.wait(lock, [&] { return done_ >= target; });
}

void SerialWorker::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return !jobs_.empty() || stop_; });
    if (jobs_.empty()) return;  // stopping, and everything posted has run
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job.fn();
    lock.lock();
    // seq_cst, as the read in queued_bytes(): the receiver holds credit, then
    // reads this; this drops, then releases what is held — one of the two sees the other.
    const uint64_t left = bytes_.fetch_sub(job.bytes) - job.bytes;
    ++done_;
    cv_.notify_all();
    if (after_each_) {
      lock.unlock();
      after_each_(left);
      lock.lock();
    }
  }
}

}  // namespace braid::transfer
