#include "engine/transfer/event_log.hpp"

#include <cerrno>
#include <cstring>

#include "engine/security/safe_path.h"

namespace braid::transfer {

bool EventLog::open(const std::string& path, std::string& error) {
  file_ = std::fopen(path.c_str(), "w");
  if (!file_) {
    error = "cannot write the log file '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

EventLog::~EventLog() {
  if (file_) std::fclose(file_);
}

void EventLog::write(const std::string& event, nlohmann::json fields) {
  if (!file_) return;
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  nlohmann::json line = {{"t", std::round(t * 1e6) / 1e6}, {"event", event}};
  for (auto& [k, v] : fields.items()) line[k] = v;
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mu_);
  std::fputs(text.c_str(), file_);
  std::fflush(file_);
}

std::string json_safe(const std::string& bytes) { return security::printable_path(bytes); }

}  // namespace braid::transfer
