#include "cli/commands.hpp"

#include "cli/sim_command.hpp"

namespace braid::cli {

void add_all_commands(CLI::App& app) { add_sim_command(app); }

}  // namespace braid::cli
