// `braid clean DIR [--older-than AGE] [--dry-run]`: removes what interrupted
// transfers left in a receiver's target directory and no later run asked for
// (files/debris.hpp): never a running transfer's, never one touched within
// AGE (default 7d), which may still resume.
#pragma once

#include <CLI/CLI.hpp>

namespace braid::cli {

void add_clean_command(CLI::App& app);

/// CLI11 check for an AGE ("7d", "12h", "30min", "0").
std::string check_age(const std::string& text);

}  // namespace braid::cli
