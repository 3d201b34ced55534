// Every subcommand of the `braid` program, registered in one place.
#pragma once

#include <CLI/CLI.hpp>

namespace braid::cli {

void add_all_commands(CLI::App& app);

}  // namespace braid::cli
