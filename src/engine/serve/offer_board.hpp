// The offers `braid serve` holds for a decision, and the policy that puts
// them there. `braid offers`, `braid accept ID`, `braid refuse ID` and the
// dashboard's buttons all act on this board (through ServeApi).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/serve/serve_config.hpp"
#include "engine/transfer/offer_decision.hpp"

namespace braid::serve {

/// What the policy says about an offer before anyone is asked.
struct PolicyVerdict {
  enum class Kind { accept, ask, refuse } kind = Kind::accept;
  std::string why;  // ask: why it waits; refuse: what the sender is told
};

/// `[accept]` and `[limits] disk_reserve`: `free_bytes` is the target's free
/// space now (nullopt: unknown, the reserve is not checked).
PolicyVerdict judge_offer(const ServeConfig& cfg, const transfer::OfferQuestion& q, std::optional<uint64_t> free_bytes);

struct WaitingOffer {
  uint64_t id = 0;  // the board's number: `braid accept ID`
  transfer::OfferQuestion question;
  int64_t since = 0;  // Unix seconds
  std::string why;    // why it waits
};

class OfferBoard {
 public:
  uint64_t add(const transfer::OfferQuestion& q, std::shared_ptr<transfer::PendingOffer> pending, std::string why,
               int64_t now);
  /// The offers still waiting (those decided, timed out or whose session
  /// ended are forgotten here).
  std::vector<WaitingOffer> list();
  /// Empty on success, else why not ("no offer 7 is waiting").
  std::string decide(uint64_t id, const transfer::OfferDecision& d);

 private:
  struct Entry {
    WaitingOffer offer;
    std::shared_ptr<transfer::PendingOffer> pending;
  };
  void forget_settled_locked();
  std::mutex mu_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Entry> entries_;
};

}  // namespace braid::serve
