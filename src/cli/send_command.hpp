// `braid send [--code CODE] [--streams N] [--lane LOCAL=REMOTE:PORT ...]
//             [--json FILE] [--log FILE] PATH... HOST[:PORT]`
#pragma once

#include <CLI/CLI.hpp>

namespace braid::cli {

void add_send_command(CLI::App& app);

}  // namespace braid::cli
