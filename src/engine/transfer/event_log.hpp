// The activity log of `--log FILE`: one JSON object per line, each with
// "t" (seconds since the log opened) and "event". Thread-safe; a log without
// a file is a no-op, so callers never check.
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace braid::transfer {

class EventLog {
 public:
  EventLog() = default;
  /// Opens (truncates) `path`; false with `error` set if it cannot.
  bool open(const std::string& path, std::string& error);
  ~EventLog();

  void write(const std::string& event, nlohmann::json fields = nlohmann::json::object());
  bool enabled() const { return file_ != nullptr; }

 private:
  std::mutex mu_;
  std::FILE* file_ = nullptr;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

/// Byte strings from the peer (names) made safe for JSON (which must be UTF-8).
std::string json_safe(const std::string& bytes);

}  // namespace braid::transfer
