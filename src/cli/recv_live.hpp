// `braid recv`'s live display: a thread asks the receiver for its running
// transfers every 200 ms and draws them (transfer/live_display.hpp); a
// transfer that ended gets its last frame and leaves the block.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "engine/transfer/live_display.hpp"
#include "engine/transfer/receiver.hpp"

namespace braid::cli {

class RecvLive {
 public:
  /// Draws nothing (and starts no thread) when `display` is off.
  RecvLive(transfer::LiveDisplay& display, const transfer::Receiver& receiver);
  ~RecvLive();
  /// Brings the display up to date now (any thread): a transfer that just
  /// ended is finished before its summary is printed.
  void poll();
  /// Stops the thread after a last poll.
  void stop();

 private:
  void poll_locked();

  transfer::LiveDisplay& display_;
  const transfer::Receiver& receiver_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, transfer::LiveTransfer> flying_;  // drawn at the last poll, by key
  std::set<std::string> finished_;
  std::thread thread_;
};

}  // namespace braid::cli
