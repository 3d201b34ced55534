// braid: move files between two machines over every path between them at once.
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "engine/transfer/exit_codes.hpp"

int main(int argc, char** argv) {
  CLI::App app{"braid: fast, verified, encrypted multi-lane file transfer"};
  app.require_subcommand(1);
  braid::cli::add_all_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help); a bad command line is exit 2
    // (docs/engine.md), whatever CLI11's own code for the kind of error.
    return app.exit(e) == 0 ? 0 : braid::transfer::kExitUsage;
  }
  return 0;
}
