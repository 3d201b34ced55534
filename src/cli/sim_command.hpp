// `braid sim`: runs scheduling policies over simulated lanes and reports them.
#pragma once

#include <CLI/CLI.hpp>

namespace braid::cli {

/// Adds the `sim` subcommand to the app; it runs when parsed.
void add_sim_command(CLI::App& app);

}  // namespace braid::cli
