// How `braid send` / `braid recv` show what happened: the per-lane table on
// the terminal and the JSON report of `--json FILE`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/transfer/report.hpp"

namespace braid::cli {

/// The per-lane table of one transfer, a line per path when the lanes
/// left by more than one (their interface), and a totals line.
std::string lane_table(const transfer::TransferReport& r);
/// send --sync: the dry run's plan (one line a file) and one line of what the sync did.
std::string sync_summary(const transfer::TransferReport& r);

/// Before any data moves: `path` (an output file: --json, --log) can be
/// created or written. Empty string if so, else one line saying why not. A
/// file this check creates is removed again.
std::string check_writable(const std::string& path);

/// Writes `doc` to `path` (pretty-printed). Empty string on success, else why not.
std::string write_json_file(const std::string& path, const nlohmann::json& doc);

}  // namespace braid::cli
