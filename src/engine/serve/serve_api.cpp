#include "engine/serve/serve_api.hpp"

#include <chrono>

#include "engine/serve/history.hpp"

namespace braid::serve {
namespace {

nlohmann::json offers_json(OfferBoard& board) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& w : board.list())
    out.push_back({{"id", w.id},
                   {"peer", w.question.peer},
                   {"paired_now", w.question.paired_now},
                   {"entries", w.question.entries},
                   {"bytes", w.question.bytes},
                   {"names", w.question.names},
                   {"since", w.since},
                   {"why", w.why}});
  return out;
}

std::optional<uint64_t> id_of(const nlohmann::json& r) {
  const auto it = r.find("id");
  if (it == r.end()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<uint64_t>();
  if (it->is_string()) {
    try {
      return std::stoull(it->get<std::string>());
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

nlohmann::json ServeApi::handle(const nlohmann::json& r) {
  const std::string op = r.value("op", std::string());
  if (op == "live") return {{"transfers", s_.live->snapshot()}};
  if (op == "history") {
    if (r.contains("id")) {
      const auto id = id_of(r);
      const auto doc = id ? History::get(s_.history_dir, *id) : std::nullopt;
      if (!doc) return {{"error", "no transfer with that id in the history"}};
      return *doc;
    }
    nlohmann::json list = nlohmann::json::array();
    for (const auto& e : History::list(s_.history_dir)) list.push_back(e.to_json());
    return {{"transfers", list}};
  }
  if (op == "offers") return {{"offers", offers_json(*s_.board)}};
  if (op == "accept" || op == "refuse") {
    const auto id = id_of(r);
    if (!id) return {{"error", "which offer? (an \"id\")"}};
    transfer::OfferDecision d;
    d.accept = op == "accept";
    if (!d.accept) d.message = r.value("reason", std::string("refused by the receiver's user"));
    if (auto why = s_.board->decide(*id, d); !why.empty()) return {{"error", why}};
    return {{"ok", true}, {"id", *id}, {"decision", op}};
  }
  if (op == "pairing") return {{"code", s_.pairing_code ? s_.pairing_code() : std::string()}};
  if (op == "peers") return {{"peers", s_.peers ? s_.peers() : nlohmann::json::array()}};
  if (op == "rename" || op == "forget") {
    const std::string label = r.value("label", std::string());
    const std::string to = op == "rename" ? r.value("to", std::string()) : std::string();
    if (label.empty() || (op == "rename" && to.empty())) return {{"error", op == "rename" ? "rename needs \"label\" and \"to\"" : "forget needs \"label\""}};
    if (!s_.edit_peer) return {{"error", "peers cannot be changed here"}};
    if (auto why = s_.edit_peer(label, to); !why.empty()) return {{"error", why}};
    return {{"ok", true}};
  }
  return {{"error", "unknown op '" + op + "' (live, history, offers, accept, refuse, pairing, peers, rename, forget)"}};
}

}  // namespace braid::serve
