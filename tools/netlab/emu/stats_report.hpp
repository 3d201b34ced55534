// Per-link counters, as text for people and JSON for scripts.
#pragma once

#include <algorithm>
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
  // How late frames were written compared with when the model said they
  // were due: the emulator's own contribution to delay error.
  std::uint64_t frames_written = 0;
  Duration late_total{0};
  Duration late_max{0};

  void record_lateness(Duration late) {
    ++frames_written;
    late_total += late;
    late_max = std::max(late_max, late);
  }
};

/// `seq` counts reports so a reader can tell a fresh one from the last.
nlohmann::json stats_json(const LabModel& lab, const std::vector<IoCounters>& io, std::uint64_t seq,
                          TimePoint now);
std::string stats_text(const LabModel& lab, const std::vector<IoCounters>& io, TimePoint now);

}  // namespace netlab
