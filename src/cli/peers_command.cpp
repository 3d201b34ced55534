#include "cli/peers_command.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "engine/discovery/discovery.hpp"
#include "engine/security/files.h"
#include "engine/transfer/exit_codes.hpp"

namespace braid::cli {
namespace {

struct PeersArgs {
  std::string from, to;  // rename
  std::string which;     // forget
  bool visible = false;  // --visible: also look on the local network
  double wait = 2.0;     // --wait S
};

[[noreturn]] void finish(int code, const std::string& msg) {
  if (!msg.empty()) std::cerr << "braid peers: " << msg << "\n";
  std::cout.flush();
  std::exit(code);
}

security::KnownPeers load_or_exit() {
  auto dir = security::default_config_dir();
  if (!dir) finish(transfer::kExitFailure, dir.error().message);
  auto known = security::KnownPeers::load_in(dir.value());
  if (!known) finish(transfer::kExitFailure, known.error().message);
  return std::move(known.value());
}

int exit_for(security::Errc e) {
  return e == security::Errc::no_such_peer || e == security::Errc::label_taken ||
                 e == security::Errc::invalid_argument
             ? transfer::kExitUsage
             : transfer::kExitFailure;
}

// "2026-12-02T04:31:07Z" -> "2026-12-02 04:31 UTC"
std::string when(const std::string& paired) {
  if (paired.size() < 16) return paired.empty() ? "-" : paired;
  return paired.substr(0, 10) + " " + paired.substr(11, 5) + " UTC";
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

void print_peers(std::ostream& out, const security::KnownPeers& known, const std::vector<VisiblePeer>& visible) {
  const auto& entries = known.entries();
  if (entries.empty()) {
    out << "No known peers yet (" << known.file().string()
        << "): a first transfer with the receiver's pairing code pairs one.\n";
  } else {
    std::size_t w = 5;
    for (const auto& e : entries) w = std::max(w, e.label.size());
    out << "Known peers (" << known.file().string() << "):\n";
    out << "  " << pad("LABEL", w) << "  " << pad("KEY", 23) << "  " << pad("PAIRED", 20) << "  CALLS ITSELF\n";
    for (const auto& e : entries)
      out << "  " << pad(e.label, w) << "  " << pad(security::short_fingerprint(e.fingerprint), 23) << "  "
          << pad(when(e.paired), 20) << "  " << (e.host.empty() ? "-" : e.host) << "\n";
  }
  if (visible.empty()) return;
  out << "Visible now on the local network:\n";
  std::size_t w = 4;
  for (const auto& v : visible) w = std::max(w, v.name.size());
  for (const auto& v : visible) {
    const security::KnownPeers::Entry* pinned = v.fingerprint ? known.find_key(*v.fingerprint) : nullptr;
    out << "  " << pad(v.name, w) << "  " << pad(v.number.empty() ? "no number" : "number " + v.number, 11) << "  "
        << pad(v.address, 30)
        << "  " << (pinned ? "known as '" + pinned->label + "'" : std::string("not paired")) << "\n";
  }
}

void add_peers_command(CLI::App& app) {
  auto args = std::make_shared<PeersArgs>();
  CLI::App* cmd = app.add_subcommand("peers", "List the peers this host trusts (by key), rename or forget one");
  cmd->require_subcommand(0, 1);
  CLI::App* rename = cmd->add_subcommand("rename", "Give a known peer another label");
  rename->add_option("old", args->from, "Its label now, or the start of its key (as listed)")->required();
  rename->add_option("new", args->to, "The new label (1 to 64 of A-Z a-z 0-9 . _ @ : + -)")->required();
  CLI::App* forget = cmd->add_subcommand("forget", "Forget a known peer: it must pair again with a code");
  forget->add_option("label", args->which, "Its label, or the start of its key (as listed)")->required();

  rename->callback([args] {
    auto known = load_or_exit();
    auto r = known.relabel(args->from, args->to);
    if (!r) finish(exit_for(r.error().code), r.error().message);
    std::cout << "renamed: " << r.value().label << "  " << security::short_fingerprint(r.value().fingerprint) << "\n";
    finish(0, "");
  });
  forget->callback([args] {
    auto known = load_or_exit();
    auto r = known.forget(args->which);
    if (!r) finish(exit_for(r.error().code), r.error().message);
    std::cout << "forgot '" << r.value().label << "' (" << security::short_fingerprint(r.value().fingerprint)
              << "): it must pair again with a code\n";
    finish(0, "");
  });
  cmd->add_flag("--visible", args->visible, "Also list the braid receivers announcing themselves on the local network");
  cmd->add_option("--wait", args->wait, "How long --visible looks, in seconds (default 2)")->check(CLI::Range(0.1, 60.0));
  cmd->callback([cmd, args] {
    if (!cmd->get_subcommands().empty()) return;  // rename/forget ran
    auto known = load_or_exit();
    std::vector<VisiblePeer> visible;
    if (args->visible) {
      for (const auto& p : discovery::browse_visible(Duration::seconds_f(args->wait))) {
        VisiblePeer v{p.name, p.rendezvous.value_or(""), p.addresses.empty() ? std::string("-") : p.addresses.front(),
                      std::nullopt};
        if (p.fingerprint)
          if (auto fp = security::Fingerprint::parse(*p.fingerprint)) v.fingerprint = fp.value();
        visible.push_back(std::move(v));
      }
    }
    print_peers(std::cout, known, visible);
    if (args->visible && visible.empty()) std::cout << "Visible now on the local network: none\n";
    finish(0, "");
  });
}

}  // namespace braid::cli
