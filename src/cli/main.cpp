// braid: move files between two machines over every path between them at once.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/did_you_mean.hpp"
#include "engine/transfer/exit_codes.hpp"

namespace {

std::vector<std::string> command_names(CLI::App& app) {
  std::vector<std::string> out;
  for (const auto* sub : app.get_subcommands({})) out.push_back(sub->get_name());
  return out;
}

// The long flags of the command being parsed (or of braid itself).
std::vector<std::string> flag_names(CLI::App& app) {
  CLI::App* cmd = &app;
  for (auto* sub : app.get_subcommands({}))
    if (sub->parsed()) cmd = sub;
  std::vector<std::string> out;
  for (const auto* opt : cmd->get_options())
    for (const auto& n : opt->get_lnames()) out.push_back("--" + n);
  return out;
}

// "--lanee x y" → "--lanee": the first unexpected argument that looks like a flag.
std::optional<std::string> unexpected_flag(const std::string& message) {
  const auto at = message.find("--");
  if (at == std::string::npos) return std::nullopt;
  const auto end = message.find_first_of(" =,\n", at);
  return message.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"braid: fast, verified, encrypted multi-lane file transfer"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("braid ") + BRAID_VERSION);
  app.footer(
      "Examples:\n"
      "  braid recv --dir ~/in                    # prints its pairing code and addresses\n"
      "  braid send --code CODE big.iso photos/ 192.168.1.20\n"
      "  braid sim --scenario scenarios/seed-5ghz.scn\n"
      "Exit codes: 0 done and verified, 1 other failure, 2 bad command line, 3 unreachable,\n"
      "  4 pairing failed, 5 a pinned peer's key changed, 6 refused, 7 not writable, 8 disk full,\n"
      "  9 verification failed, 10 lanes lost, 11 partial (sources skipped), 130/143 interrupted\n"
      "Config: $XDG_CONFIG_HOME/braid (else ~/.config/braid): identity.key, identity.crt, known_peers");
  braid::cli::add_all_commands(app);
  const auto commands = command_names(app);
  if (argc < 2) {  // bare `braid`: what it can do, on stderr, and exit 2
    std::cerr << app.help() << std::flush;
    return braid::transfer::kExitUsage;
  }
  const std::string first = argv[1];
  if (!first.empty() && first[0] != '-' && std::find(commands.begin(), commands.end(), first) == commands.end()) {
    std::string line = "braid: unknown command '" + first + "'";
    if (auto near = braid::cli::nearest_name(first, commands)) line += " (did you mean '" + *near + "'?)";
    std::cerr << line << "; commands:";
    for (const auto& c : commands) std::cerr << " " << c;
    std::cerr << " (braid --help)" << std::endl;
    return braid::transfer::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help); a bad command line is exit 2
    // (docs/engine.md), whatever CLI11's own code for the kind of error.
    if (dynamic_cast<const CLI::ExtrasError*>(&e))
      if (auto typed = unexpected_flag(e.what()))
        if (auto near = braid::cli::nearest_name(*typed, flag_names(app)))
          std::cerr << "braid: unknown flag '" << *typed << "' (did you mean '" << *near << "'?)" << std::endl;
    return app.exit(e) == 0 ? 0 : braid::transfer::kExitUsage;
  }
  return 0;
}
