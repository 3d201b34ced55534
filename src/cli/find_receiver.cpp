#include "cli/find_receiver.hpp"

#include <cstdio>
#include <iostream>

#include "engine/discovery/discovery.hpp"
#include "engine/lanes/endpoint.hpp"
#include "engine/security/code_strength.h"
#include "engine/security/files.h"
#include "engine/security/known_peers.h"
#include "engine/transfer/exit_codes.hpp"

namespace braid::cli {
namespace {

std::optional<security::KnownPeers> load_known_peers() {
  auto dir = security::default_config_dir();
  if (!dir) return std::nullopt;
  auto known = security::KnownPeers::load_in(dir.value());
  if (!known) return std::nullopt;
  return known.value();
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

}  // namespace

std::variant<SendTarget, transfer::Failure> find_receiver(const std::string& operand,
                                                          const std::optional<std::string>& code_flag,
                                                          double wait_seconds) {
  using transfer::Failure;
  const auto known = load_known_peers();
  const auto pinned = [&](std::string_view name) -> const security::KnownPeers::Entry* {
    if (!known) return nullptr;
    for (const auto& e : known->entries())
      if (e.label == name) return &e;
    return nullptr;
  };
  const auto kind = discovery::classify_target(operand, [&](std::string_view n) { return pinned(n) != nullptr; });
  SendTarget out;
  out.code = code_flag;
  if (kind == discovery::TargetKind::address) {
    // A bare word that is no host either: say what else it could have been.
    std::string error;
    if (operand.find(':') == std::string::npos && lanes::resolve_endpoint(operand, 1, error).empty())
      return Failure{transfer::kExitUnreachable,
                     "'" + operand + "' is not a host name that resolves (" + error +
                         "), nor a paired peer's name (braid peers), nor a pairing code"};
    out.candidates.push_back({operand, {operand}});
    return out;
  }
  const Duration wait = Duration::seconds_f(wait_seconds);
  std::string error;
  std::vector<discovery::VisiblePeer> seen;
  std::function<bool(const discovery::VisiblePeer&)> match;
  std::string what;  // "announcing 4711" / "with lab's key (SHA256:…)"
  if (kind == discovery::TargetKind::code) {
    if (code_flag && *code_flag != operand)
      return Failure{transfer::kExitUsage, "two different codes given (--code and '" + operand + "'); give one"};
    // An operand code is checked like one given with --code: a weak or
    // mistyped code is one line and exit 2 before anything is sent.
    if (auto st = security::check_chosen_code(operand); !st) return Failure{transfer::kExitUsage, st.error().message};
    out.code = operand;
    const auto number = discovery::rendezvous_of(operand);
    if (!number)
      return Failure{transfer::kExitUsage,
                     "this code carries no public number to find the receiver by; give the receiver's HOST[:PORT] "
                     "after the code: braid send --code CODE PATH... HOST[:PORT]"};
    match = [n = *number](const discovery::VisiblePeer& p) { return p.rendezvous == n; };
    what = "announcing " + *number;
  } else {
    const auto* e = pinned(operand);
    const std::string fp = e->fingerprint.to_string();
    match = [fp](const discovery::VisiblePeer& p) { return p.fingerprint == fp; };
    what = "with " + operand + "'s key (" + fp + ")";
  }
  seen = discovery::browse(wait, match, error);
  if (!error.empty())
    return Failure{transfer::kExitUnreachable,
                   "cannot look for the receiver on the local network: " + error + "; give its HOST[:PORT]"};
  for (const auto& p : seen)
    if (match(p) && !p.addresses.empty()) out.candidates.push_back({p.name, p.addresses});
  if (out.candidates.empty())
    return Failure{transfer::kExitUnreachable, "no braid receiver " + what + " seen on the local network in " +
                                                   seconds_text(wait_seconds) +
                                                   "; is `braid recv` running there, or give HOST:PORT"};
  if (out.candidates.size() > 1) {
    std::string names;
    for (const auto& c : out.candidates) names += (names.empty() ? "" : ", ") + c.name;
    std::cerr << "braid send: " << out.candidates.size() << " receivers " << what << " (" << names
              << "): trying each in turn" << std::endl;
  }
  return out;
}

std::variant<std::unique_ptr<transfer::SenderSession>, transfer::Failure> connect_any(const SendTarget& target,
                                                                                     transfer::ConnectOptions co,
                                                                                     transfer::EventLog& log,
                                                                                     const std::string& command) {
  std::optional<transfer::Failure> last;
  for (size_t c = 0; c < target.candidates.size(); ++c) {
    const auto& cand = target.candidates[c];
    for (size_t i = 0; i < cand.remotes.size(); ++i) {
      co.remote = cand.remotes[i];
      auto connected = transfer::SenderSession::connect(co, log);
      if (std::holds_alternative<std::unique_ptr<transfer::SenderSession>>(connected)) return connected;
      last = std::get<transfer::Failure>(connected);
      if (last->exit_code != transfer::kExitUnreachable) break;  // it answered: its other addresses would too
    }
    if (c + 1 < target.candidates.size())
      std::cerr << "braid " << command << ": " << cand.name << ": " << last->message << "; trying the next receiver" << std::endl;
  }
  if (!last) return transfer::Failure{transfer::kExitUnreachable, "no receiver to connect to"};
  return *last;
}

}  // namespace braid::cli
