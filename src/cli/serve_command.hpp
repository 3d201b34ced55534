// `braid serve [--config FILE] [--foreground]`: a receiver left running
// (docs/serve.md), and the commands that talk to it or read what it kept:
// `braid history [--json] [ID]`, `braid offers`, `braid accept ID`,
// `braid refuse ID [--reason TEXT]`.
#pragma once

#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

#include "engine/serve/serve_config.hpp"

namespace braid::cli {

void add_serve_command(CLI::App& app);
void add_serve_client_commands(CLI::App& app);

/// Where to find serve's config and state, as every serve command is told.
struct ServeLocation {
  std::string config;     // --config FILE; empty: serve::default_config_file() if it exists
  std::string state_dir;  // --state-dir DIR; empty: the config's, else serve::default_state_dir()
};
void add_location_options(CLI::App* cmd, ServeLocation& where);
/// The config (defaults if no file), its state_dir resolved; exits 2 with
/// one line on a bad or missing --config file.
serve::ServeConfig load_config_or_exit(const ServeLocation& where, const std::string& command);

}  // namespace braid::cli
