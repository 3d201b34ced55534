// braid: move files between two machines over every path between them at once.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/did_you_mean.hpp"
#include "cli/generate.hpp"
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
  braid::cli::describe_app(app);
  braid::cli::add_all_commands(app);
  const auto commands = command_names(app);
  if (argc < 2) {  // bare `braid`: what it can do, on stderr, and exit 2
    std::cerr << app.help() << std::flush;
    return braid::transfer::kExitUsage;
  }
  const std::string first = argv[1];
  // Hidden: the man page and completions, from these same definitions (CMake runs it at build time).
  if (first == "--generate") {
    if (argc == 3 && braid::cli::generate(app, argv[2], BRAID_VERSION, std::cout)) return 0;
    std::cerr << "braid: --generate man|bash|zsh" << std::endl;
    return braid::transfer::kExitUsage;
  }
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
    // Help and --version print and exit 0; every mistake is one line on
    // stderr and exit 2 (docs/engine.md), whatever CLI11's own code for it.
    if (e.get_exit_code() == 0) return app.exit(e);
    if (dynamic_cast<const CLI::ExtrasError*>(&e))
      if (auto typed = unexpected_flag(e.what()))
        if (auto near = braid::cli::nearest_name(*typed, flag_names(app))) {
          std::cerr << "braid: unknown flag '" << *typed << "' (did you mean '" << *near << "'?)" << std::endl;
          return braid::transfer::kExitUsage;
        }
    std::string cmd = "braid";
    CLI::App* parsed = &app;
    for (auto* sub : app.get_subcommands({}))
      if (sub->parsed()) {
        cmd += " " + sub->get_name();
        parsed = sub;
      }
    std::string what = e.what();
    // "operands is required": say what is missing as the help writes it.
    if (dynamic_cast<const CLI::RequiredError*>(&e))
      for (const auto* opt : parsed->get_options())
        if (!opt->nonpositional() && what.rfind(opt->get_name() + " is required", 0) == 0)
          what = "missing " + braid::cli::value_name(*opt);
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::cerr << cmd << ": " << what << " (" << cmd << " --help)" << std::endl;
    return braid::transfer::kExitUsage;
  }
  return 0;
}
