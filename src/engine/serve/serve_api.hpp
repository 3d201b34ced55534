// What `braid serve` answers: one handler for the local control socket
// (`braid offers`, `braid accept`, `braid refuse`) and the dashboard's HTTP
// API, so both see and do exactly the same. Requests are JSON objects with
// an "op": live, history (optional "id"), offers, accept ("id"), refuse
// ("id", optional "reason"), pairing, peers, rename ("label", "to"), forget
// ("label"). Answers are JSON; a failure is
// {"error": "..."}.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/serve/live_sampler.hpp"
#include "engine/serve/offer_board.hpp"

namespace braid::serve {

struct ServeSources {
  std::filesystem::path history_dir;
  OfferBoard* board = nullptr;
  LiveSampler* live = nullptr;
  std::function<std::string()> pairing_code;  // the live code, "" if none
  std::function<nlohmann::json()> peers;      // the pinned peers
  /// Renames the pinned peer `which` to `to`, or forgets it when `to` is
  /// empty (KnownPeers::relabel, forget): empty, or why not.
  std::function<std::string(const std::string& which, const std::string& to)> edit_peer;
};

class ServeApi {
 public:
  explicit ServeApi(ServeSources s) : s_(std::move(s)) {}
  nlohmann::json handle(const nlohmann::json& request);

 private:
  ServeSources s_;
};

}  // namespace braid::serve
