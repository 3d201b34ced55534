#include "engine/serve/offer_board.hpp"

#include <algorithm>

#include "core/units_parse.hpp"

namespace braid::serve {

PolicyVerdict judge_offer(const ServeConfig& cfg, const transfer::OfferQuestion& q, std::optional<uint64_t> free_bytes) {
  using K = PolicyVerdict::Kind;
  if (cfg.disk_reserve_bytes && free_bytes && (*free_bytes < q.bytes || *free_bytes - q.bytes < cfg.disk_reserve_bytes))
    return {K::refuse, "the receiver keeps " + format_size(Bytes(cfg.disk_reserve_bytes)) +
                           " free (disk_reserve) and has " + format_size(Bytes(*free_bytes)) + " free"};
  bool trusted = false;
  switch (cfg.accept_from) {
    case AcceptFrom::pinned: trusted = !q.paired_now; break;
    case AcceptFrom::none: trusted = false; break;
    case AcceptFrom::listed:
      trusted = !q.paired_now &&
                std::find(cfg.accept_labels.begin(), cfg.accept_labels.end(), q.peer) != cfg.accept_labels.end();
      break;
  }
  if (!trusted)
    return {K::ask, q.paired_now ? "it paired with the code in this session"
                    : cfg.accept_from == AcceptFrom::none ? "every offer waits ([accept] from = \"none\")"
                                                          : "its label is not in [accept] from"};
  if (cfg.ask_above_bytes && q.bytes > cfg.ask_above_bytes)
    return {K::ask, "it is larger than " + format_size(Bytes(cfg.ask_above_bytes)) + " ([accept] ask_above)"};
  return {K::accept, {}};
}

uint64_t OfferBoard::add(const transfer::OfferQuestion& q, std::shared_ptr<transfer::PendingOffer> pending,
                         std::string why, int64_t now) {
  std::lock_guard lock(mu_);
  forget_settled_locked();
  const uint64_t id = next_id_++;
  entries_[id] = Entry{WaitingOffer{id, q, now, std::move(why)}, std::move(pending)};
  return id;
}

void OfferBoard::forget_settled_locked() {
  for (auto it = entries_.begin(); it != entries_.end();)
    it = it->second.pending->open() ? std::next(it) : entries_.erase(it);
}

std::vector<WaitingOffer> OfferBoard::list() {
  std::lock_guard lock(mu_);
  forget_settled_locked();
  std::vector<WaitingOffer> out;
  for (const auto& [id, e] : entries_) out.push_back(e.offer);
  return out;
}

std::string OfferBoard::decide(uint64_t id, const transfer::OfferDecision& d) {
  std::shared_ptr<transfer::PendingOffer> pending;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return "no offer " + std::to_string(id) + " is waiting (braid offers lists them)";
    pending = it->second.pending;
    entries_.erase(it);
  }
  // Outside the board's lock: deciding takes the session's lock.
  if (!pending->decide(d)) return "offer " + std::to_string(id) + " is no longer waiting (timed out, or its sender left)";
  return {};
}

}  // namespace braid::serve
