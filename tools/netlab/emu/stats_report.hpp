// Per-link counters, as text for people and JSON for scripts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/lab_model.hpp"

namespace netlab {

/// What the emulator itself saw, per link direction (index link * 2 + dir).
struct IoCounters {
  std::uint64_t frames_read = 0;  // reads from TUN (a GSO frame is one)
  std::uint64_t write_errors = 0;
};

/// `seq` counts reports so a reader can tell a fresh one from the last.
nlohmann::json stats_json(const LabModel& lab, const std::vector<IoCounters>& io, std::uint64_t seq,
                          TimePoint now);
std::string stats_text(const LabModel& lab, const std::vector<IoCounters>& io, TimePoint now);

}  // namespace netlab
