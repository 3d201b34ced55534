#include "engine/serve/history.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "engine/security/files.h"

namespace braid::serve {
namespace {

constexpr const char* kIndex = "index.jsonl";

int64_t unix_seconds(History::SystemTime t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

nlohmann::json HistoryEntry::to_json() const {
  return {{"id", id},       {"time", time},     {"peer", peer},           {"files", files},
          {"bytes", bytes}, {"seconds", seconds}, {"rate_bytes_per_sec", rate_bytes_per_sec},
          {"status", status}, {"verified", verified}};
}

std::optional<HistoryEntry> HistoryEntry::from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("id") || !j["id"].is_number_unsigned()) return std::nullopt;
  HistoryEntry e;
  e.id = j.value("id", uint64_t{0});
  e.time = j.value("time", int64_t{0});
  e.peer = j.value("peer", std::string());
  e.files = j.value("files", uint64_t{0});
  e.bytes = j.value("bytes", uint64_t{0});
  e.seconds = j.value("seconds", 0.0);
  e.rate_bytes_per_sec = j.value("rate_bytes_per_sec", 0.0);
  e.status = j.value("status", std::string());
  e.verified = j.value("verified", false);
  return e;
}

History::History(std::filesystem::path dir, size_t keep, std::chrono::seconds max_age)
    : dir_(std::move(dir)), keep_(std::max<size_t>(1, keep)), max_age_(max_age) {}

std::filesystem::path History::report_path(uint64_t id) const { return dir_ / (std::to_string(id) + ".json"); }

std::string History::open(SystemTime now) {
  std::lock_guard lock(mu_);
  if (auto st = security::ensure_private_dir(dir_); !st) return "history: " + st.error().message;
  for (const auto& e : list(dir_)) next_id_ = std::max(next_id_, e.id + 1);
  prune_locked(now);
  return {};
}

std::string History::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

uint64_t History::add(const transfer::TransferReport& report, SystemTime now) {
  std::lock_guard lock(mu_);
  HistoryEntry e;
  e.id = next_id_++;
  e.time = unix_seconds(now);
  e.peer = report.peer;
  e.files = report.files;
  e.bytes = report.bytes;
  e.seconds = report.seconds;
  e.rate_bytes_per_sec = report.rate_bytes_per_sec;
  e.status = report.status;
  e.verified = report.verified;
  nlohmann::json doc = transfer::to_json(report);
  doc["history"] = e.to_json();
  // The report first, whole (temp + rename), then its index line: a crash
  // between the two leaves a report that no listing shows, never a listed
  // report that is missing or half written.
  if (auto st = security::replace_file(report_path(e.id), doc.dump(2) + "\n", 0600); !st) {
    error_ = st.error().message;
    return 0;
  }
  const std::string line = e.to_json().dump() + "\n";
  const std::string index = (dir_ / kIndex).string();
  const int fd = ::open(index.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    error_ = "cannot append to " + index + ": " + security::errno_text(errno);
    if (fd >= 0) ::close(fd);
    return 0;
  }
  ::close(fd);
  prune_locked(now);
  return e.id;
}

void History::prune_locked(SystemTime now) {
  auto entries = list(dir_);
  const int64_t oldest = unix_seconds(now) - max_age_.count();
  size_t drop = entries.size() > keep_ ? entries.size() - keep_ : 0;
  std::vector<HistoryEntry> kept;
  bool changed = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i < drop || entries[i].time < oldest) {
      std::error_code ec;
      std::filesystem::remove(report_path(entries[i].id), ec);
      changed = true;
    } else {
      kept.push_back(entries[i]);
    }
  }
  if (!changed) return;
  std::string text;
  for (const auto& e : kept) text += e.to_json().dump() + "\n";
  if (auto st = security::replace_file(dir_ / kIndex, text, 0600); !st) error_ = st.error().message;
}

std::vector<HistoryEntry> History::list(const std::filesystem::path& dir) {
  std::vector<HistoryEntry> out;
  std::istringstream in(read_all(dir / kIndex));
  std::string line;
  while (std::getline(in, line)) {
    // A line cut short by a crash mid-append is skipped, not fatal.
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (auto e = HistoryEntry::from_json(j)) out.push_back(*e);
  }
  return out;
}

std::optional<nlohmann::json> History::get(const std::filesystem::path& dir, uint64_t id) {
  const auto p = dir / (std::to_string(id) + ".json");
  if (!std::filesystem::exists(p)) return std::nullopt;
  auto j = nlohmann::json::parse(read_all(p), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace braid::serve
