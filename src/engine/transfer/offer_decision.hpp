// An offer that waits for someone's decision (`braid serve`: `braid accept
// ID`, the dashboard's buttons) instead of a terminal prompt.
//
// The receiver session asks an OfferDecider on its control thread and does
// not wait there: the decider returns at once and keeps the PendingOffer;
// whoever settles it first — a decision from any thread, the session's
// decision timeout, the session's end — wins, and only a decision or the
// timeout reaches the session (as a job for its control thread, like every
// other). So a waiting offer costs no thread, and the session's timers and
// lanes go on meanwhile.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/wire/messages.hpp"

namespace braid::transfer {

struct OfferDecision {
  bool accept = false;
  wire::RefuseReason reason = wire::RefuseReason::declined;  // when refused
  std::string message;  // when refused: what the sender prints
};

/// What a decider knows about an offer.
struct OfferQuestion {
  uint64_t session_id = 0;
  uint32_t transfer_id = 0;
  std::string peer;         // its label in known_peers
  bool paired_now = false;  // it proved the pairing code in this very session (was not pinned before)
  size_t entries = 0;
  uint64_t bytes = 0;
  std::vector<std::string> names;  // the first few top-level names, printable
};

/// One waiting offer's answer: settled once.
class PendingOffer {
 public:
  explicit PendingOffer(std::function<void(const OfferDecision&)> deliver) : deliver_(std::move(deliver)) {}
  /// From any thread: false if it was settled already (decided, timed out,
  /// or its session ended).
  bool decide(const OfferDecision& d) {
    std::lock_guard lock(mu_);
    if (settled_) return false;
    settled_ = true;
    if (deliver_) deliver_(d);
    deliver_ = nullptr;
    return true;
  }
  /// Still waiting for a decision.
  bool open() const {
    std::lock_guard lock(mu_);
    return !settled_;
  }
  /// Its session ended: nothing reaches it any more.
  void withdraw() {
    std::lock_guard lock(mu_);
    settled_ = true;
    deliver_ = nullptr;
  }

 private:
  mutable std::mutex mu_;
  bool settled_ = false;
  std::function<void(const OfferDecision&)> deliver_;
};

/// Called on a session's control thread for each offer; must return at once
/// (keep `pending` and decide later, or decide now).
using OfferDecider = std::function<void(const OfferQuestion&, std::shared_ptr<PendingOffer> pending)>;

}  // namespace braid::transfer
