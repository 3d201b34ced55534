// `braid recv --dir DIR [--listen ADDR:PORT ...] [--code CODE] [--yes]
//             [--once] [--json FILE] [--log FILE]`
#pragma once

#include <CLI/CLI.hpp>

namespace braid::cli {

void add_recv_command(CLI::App& app);

}  // namespace braid::cli
