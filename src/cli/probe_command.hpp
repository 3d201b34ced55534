// `braid probe CODE|LABEL|HOST[:PORT]`: pairs like `send`, then measures
// each path alone and all of them together (capacity, RTT idle and under
// load, loss), prints one table, and predicts a transfer over these paths
// with the simulator fed the measured figures. `--json`, `--plot FILE.png`.
#pragma once

#include <CLI/CLI.hpp>

namespace braid::cli {

void add_probe_command(CLI::App& app);

}  // namespace braid::cli
