// `braid serve`'s history: every finished transfer's report kept on disk,
// one JSON file per transfer (the same object `--json` writes per transfer)
// plus an index of one summary line each, in STATE_DIR/history/. Files, not
// a database (docs/serve.md, "History"): the serve process is the only
// writer, a listing reads one small file, `jq` reads all of it, and a crash
// mid-write leaves at worst a report without its index line.
//
// Retention: at most `keep` transfers and none older than `max_age`,
// enforced on every add and at open.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/transfer/report.hpp"

namespace braid::serve {

/// One line of the index: what `braid history` lists.
struct HistoryEntry {
  uint64_t id = 0;
  int64_t time = 0;  // when it ended, Unix seconds
  std::string peer;
  uint64_t files = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  double rate_bytes_per_sec = 0;
  std::string status;  // "verified" or what went wrong
  bool verified = false;

  nlohmann::json to_json() const;
  static std::optional<HistoryEntry> from_json(const nlohmann::json& j);
};

class History {
 public:
  using SystemTime = std::chrono::system_clock::time_point;
  History(std::filesystem::path dir, size_t keep, std::chrono::seconds max_age);

  /// Creates the directory (0700) and applies retention. Empty, or why not.
  std::string open(SystemTime now);
  /// Keeps a finished transfer's report; returns its id (0 if it could not be written: `error()` says why).
  uint64_t add(const transfer::TransferReport& report, SystemTime now);
  std::string error() const;

  /// Oldest first. Reading needs no History object of the writer: any process may.
  static std::vector<HistoryEntry> list(const std::filesystem::path& dir);
  /// The full report of one transfer, with its summary under "history".
  static std::optional<nlohmann::json> get(const std::filesystem::path& dir, uint64_t id);

 private:
  void prune_locked(SystemTime now);
  std::filesystem::path report_path(uint64_t id) const;

  std::filesystem::path dir_;
  size_t keep_;
  std::chrono::seconds max_age_;
  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  std::string error_;
};

}  // namespace braid::serve
