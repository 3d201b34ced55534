// `braid history`, `braid offers`, `braid accept`, `braid refuse`: history
// is read from the files serve keeps (no serve needs to run); offers are
// asked of the running serve over its control socket.
#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <memory>

#include "cli/serve_command.hpp"
#include "core/units_parse.hpp"
#include "engine/serve/control_socket.hpp"
#include "engine/serve/history.hpp"
#include "engine/transfer/exit_codes.hpp"

namespace braid::cli {
namespace {

[[noreturn]] void finish(const std::string& command, int code, const std::string& msg) {
  if (!msg.empty()) std::cerr << "braid " << command << ": " << msg << "\n";
  std::cout.flush();
  std::exit(code);
}

std::string utc(int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string pad(std::string s, size_t w) {
  if (s.size() < w) s.append(w - s.size(), ' ');
  return s;
}

struct HistoryArgs {
  ServeLocation where;
  bool json = false;
  uint64_t id = 0;
};

void run_history(const HistoryArgs& a) {
  const auto cfg = load_config_or_exit(a.where, "history");
  const auto dir = cfg.state_dir / "history";
  if (a.id) {
    const auto doc = serve::History::get(dir, a.id);
    if (!doc) finish("history", transfer::kExitUsage, "no transfer " + std::to_string(a.id) + " in " + dir.string());
    std::cout << doc->dump(2) << "\n";
    return;
  }
  const auto entries = serve::History::list(dir);
  if (a.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& e : entries) list.push_back(e.to_json());
    std::cout << nlohmann::json{{"transfers", list}}.dump(2) << "\n";
    return;
  }
  if (entries.empty()) {
    std::cout << "No transfers in the history yet (" << dir.string() << ").\n";
    return;
  }
  size_t w = 4;
  for (const auto& e : entries) w = std::max(w, e.peer.size());
  std::cout << pad("ID", 6) << pad("ENDED (UTC)", 21) << pad("PEER", w + 2) << pad("FILES", 7) << pad("SIZE", 12)
            << pad("TIME", 10) << pad("RATE", 16) << "OUTCOME\n";
  for (const auto& e : entries)
    std::cout << pad(std::to_string(e.id), 6) << pad(utc(e.time), 21) << pad(e.peer, w + 2)
              << pad(std::to_string(e.files), 7) << pad(format_size(Bytes(e.bytes)), 12)
              << pad(format_duration(Duration::seconds_f(e.seconds)), 10)
              << pad(format_rate(Rate::bytes_per_sec(e.rate_bytes_per_sec)), 16) << e.status << "\n";
}

nlohmann::json ask_serve(const ServeLocation& where, const std::string& command, const nlohmann::json& request) {
  const auto cfg = load_config_or_exit(where, command);
  auto answer = serve::control_request(cfg.state_dir / "control.sock", request);
  if (auto* why = std::get_if<std::string>(&answer)) finish(command, transfer::kExitFailure, *why);
  auto& j = std::get<nlohmann::json>(answer);
  if (j.contains("error")) finish(command, transfer::kExitUsage, j["error"].get<std::string>());
  return j;
}

void run_offers(const ServeLocation& where, bool json) {
  const auto j = ask_serve(where, "offers", {{"op", "offers"}});
  if (json) {
    std::cout << j.dump(2) << "\n";
    return;
  }
  if (j["offers"].empty()) {
    std::cout << "No offer is waiting.\n";
    return;
  }
  for (const auto& o : j["offers"]) {
    std::cout << o["id"].get<uint64_t>() << "  '" << o["peer"].get<std::string>() << "' offers "
              << o["entries"].get<uint64_t>() << (o["entries"].get<uint64_t>() == 1 ? " entry, " : " entries, ")
              << format_size(Bytes(o["bytes"].get<uint64_t>())) << ":";
    for (const auto& n : o["names"]) std::cout << " " << n.get<std::string>();
    std::cout << "  (waits: " << o["why"].get<std::string>() << ")\n";
  }
}

}  // namespace

void add_serve_client_commands(CLI::App& app) {
  {
    auto a = std::make_shared<HistoryArgs>();
    CLI::App* cmd = app.add_subcommand("history", "List the transfers `braid serve` received (or show one's report)");
    add_location_options(cmd, a->where);
    cmd->add_flag("--json", a->json, "The list as JSON");
    cmd->add_option("id", a->id, "Show this transfer's whole report (JSON)");
    cmd->callback([a] { run_history(*a); });
  }
  {
    auto where = std::make_shared<ServeLocation>();
    auto json = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("offers", "List the offers waiting for a decision in `braid serve`");
    add_location_options(cmd, *where);
    cmd->add_flag("--json", *json, "As JSON");
    cmd->callback([where, json] { run_offers(*where, *json); });
  }
  for (const std::string op : {"accept", "refuse"}) {
    auto where = std::make_shared<ServeLocation>();
    auto id = std::make_shared<uint64_t>(0);
    auto reason = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand(op, op == "accept" ? "Accept an offer waiting in `braid serve` (braid offers)"
                                                          : "Refuse an offer waiting in `braid serve` (braid offers)");
    add_location_options(cmd, *where);
    cmd->add_option("id", *id, "The offer's number, as `braid offers` lists it")->required();
    if (op == "refuse") cmd->add_option("--reason", *reason, "What the sender is told (default: refused by the receiver's user)");
    cmd->callback([where, id, reason, op] {
      nlohmann::json r = {{"op", op}, {"id", *id}};
      if (!reason->empty()) r["reason"] = *reason;
      (void)ask_serve(*where, op, r);
      std::cout << "braid " << op << ": offer " << *id << (op == "accept" ? " accepted" : " refused") << "\n";
    });
  }
}

}  // namespace braid::cli
