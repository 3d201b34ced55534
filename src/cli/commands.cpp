#include "cli/commands.hpp"

#include "cli/clean_command.hpp"
#include "cli/peers_command.hpp"
#include "cli/probe_command.hpp"
#include "cli/recv_command.hpp"
#include "cli/relay_command.hpp"
#include "cli/send_command.hpp"
#include "cli/serve_command.hpp"
#include "cli/sim_command.hpp"

namespace braid::cli {

void add_all_commands(CLI::App& app) {
  add_sim_command(app);
  add_send_command(app);
  add_recv_command(app);
  add_relay_command(app);
  add_clean_command(app);
  add_peers_command(app);
  add_probe_command(app);
  add_serve_command(app);
  add_serve_client_commands(app);
}

}  // namespace braid::cli
