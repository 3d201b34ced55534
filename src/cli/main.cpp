// braid: move files between two machines over every path between them at once.
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"braid: fast, verified, encrypted multi-lane file transfer"};
  app.require_subcommand(1);
  braid::cli::add_all_commands(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
