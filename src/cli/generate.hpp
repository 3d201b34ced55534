// The `braid` program described once: its help text, the placeholders of
// option values, and the man page and shell completions generated from the
// same CLI11 definitions (`braid --generate man|bash|zsh`, run at build time
// by CMake), so that no flag can be in one and missing from another.
#pragma once

#include <CLI/CLI.hpp>

#include <ostream>
#include <string>

namespace braid::cli {

/// Names the program "braid" (not the path it was started by), sets the
/// help's footer (examples, exit codes, config paths) and a formatter that
/// shows value placeholders (FILE, N, keep|safe|skip) instead of CLI11's
/// type names ("UINT:INT in [1 - 256]").
void describe_app(CLI::App& app);

/// What a person reads for an option's value: "FILE", "N", "keep|safe|skip";
/// empty for a flag. For a positional, what it stands for: "PATH... HOST[:PORT]".
std::string value_name(const CLI::Option& opt);

/// Writes the man page ("man"), or the bash ("bash") or zsh ("zsh")
/// completion script for `app` (with every command added). False for an
/// unknown kind.
bool generate(const CLI::App& app, const std::string& kind, const std::string& version, std::ostream& out);

}  // namespace braid::cli
