// How `braid send` / `braid recv` show what happened: the per-lane table on
// the terminal and the JSON report of `--json FILE`.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/transfer/report.hpp"

namespace braid::cli {

/// The per-lane table of one transfer, with a totals line.
std::string lane_table(const transfer::TransferReport& r);

/// Writes `doc` to `path` (pretty-printed). Empty string on success, else why not.
std::string write_json_file(const std::string& path, const nlohmann::json& doc);

}  // namespace braid::cli
