#include "cli/recv_live.hpp"

#include <chrono>

namespace braid::cli {

RecvLive::RecvLive(transfer::LiveDisplay& display, const transfer::Receiver& receiver)
    : display_(display), receiver_(receiver) {
  if (display_.mode() == transfer::LiveDisplay::Mode::off) return;
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_; });
      poll_locked();
    }
  });
}

RecvLive::~RecvLive() { stop(); }

void RecvLive::poll() {
  if (display_.mode() == transfer::LiveDisplay::Mode::off) return;
  std::lock_guard lock(mu_);
  poll_locked();
}

void RecvLive::poll_locked() {
  std::vector<transfer::LiveTransfer> drawn;
  std::set<std::string> seen;
  for (auto& t : receiver_.live()) {
    const std::string key = t.key();
    seen.insert(key);
    if (finished_.count(key)) continue;
    if (t.ended) {
      display_.finish(t);
      finished_.insert(key);
      flying_.erase(key);
      continue;
    }
    flying_[key] = t;
    drawn.push_back(std::move(t));
  }
  // A session that ended between two polls takes its transfers with it:
  // they leave with the last frame drawn.
  for (auto it = flying_.begin(); it != flying_.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    display_.finish(it->second);
    finished_.insert(it->first);
    it = flying_.erase(it);
  }
  display_.update(drawn);
}

void RecvLive::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (display_.mode() != transfer::LiveDisplay::Mode::off) poll();
}

}  // namespace braid::cli
