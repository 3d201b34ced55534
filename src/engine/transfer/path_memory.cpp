#include "engine/transfer/path_memory.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/security/files.h"

namespace braid::transfer {

namespace {
constexpr const char* kFileName = "path-figures.json";

}  // namespace

PathMemory PathMemory::load(const std::filesystem::path& dir) {
  auto text = security::read_small_file(dir / kFileName, false);
  if (!text || !text.value()) return {};
  return parse(*text.value());
}

PathMemory PathMemory::parse(const std::string& text) {
  PathMemory m;
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("version") || doc["version"] != 1 || !doc.contains("peers") ||
      !doc["peers"].is_object())
    return m;
  for (const auto& [peer, paths] : doc["peers"].items()) {
    if (!paths.is_object() || m.peers_.size() >= kMaxPeers) continue;
    for (const auto& [path, f] : paths.items()) {
      // Only numbers count: a hand-edited or damaged entry is skipped, never thrown on.
      const auto number = [&](const char* k) {
        return f.is_object() && f.contains(k) && f[k].is_number() ? f[k].get<double>() : 0.0;
      };
      const double rate = number("rate_bytes_per_sec");
      const auto rtt = static_cast<int64_t>(number("rtt_us"));
      const auto at = static_cast<int64_t>(number("at"));
      if (!(rate > 0) || rtt <= 0 || m.peers_[peer].size() >= kMaxPathsPerPeer) continue;
      m.peers_[peer][path] = {rate, rtt, at};
    }
  }
  return m;
}

std::optional<transport::StartHint> PathMemory::hint(const std::string& peer, const std::string& path,
                                                     int64_t now_unix) const {
  const auto p = peers_.find(peer);
  if (p == peers_.end()) return std::nullopt;
  const auto f = p->second.find(path);
  if (f == p->second.end()) return std::nullopt;
  const int64_t age = now_unix - f->second.at;
  if (age < 0 || age > kMaxAgeSeconds) return std::nullopt;
  return transport::StartHint{Rate::bytes_per_sec(f->second.rate_bytes_per_sec), Duration::micros(f->second.rtt_us)};
}

void PathMemory::remember(const std::string& peer, const std::string& path, transport::StartHint figures,
                          int64_t now_unix) {
  if (figures.rate.is_zero() || figures.rtt <= Duration::zero()) return;
  auto& paths = peers_[peer];
  paths[path] = {figures.rate.bytes_per_second(), figures.rtt.ns() / 1000, now_unix};
  auto last_used = [](const std::map<std::string, Figures>& ps) {
    int64_t t = 0;
    for (const auto& [k, f] : ps) t = std::max(t, f.at);
    return t;
  };
  while (paths.size() > kMaxPathsPerPeer)
    paths.erase(std::min_element(paths.begin(), paths.end(),
                                 [](const auto& a, const auto& b) { return a.second.at < b.second.at; }));
  while (peers_.size() > kMaxPeers)
    peers_.erase(std::min_element(peers_.begin(), peers_.end(), [&](const auto& a, const auto& b) {
      return last_used(a.second) < last_used(b.second);
    }));
}

std::string PathMemory::to_text() const {
  nlohmann::json peers = nlohmann::json::object();
  for (const auto& [peer, paths] : peers_) {
    nlohmann::json ps = nlohmann::json::object();
    for (const auto& [path, f] : paths)
      ps[path] = {{"rate_bytes_per_sec", f.rate_bytes_per_sec}, {"rtt_us", f.rtt_us}, {"at", f.at}};
    peers[peer] = ps;
  }
  return nlohmann::json{{"version", 1}, {"peers", peers}}.dump(1) + "\n";
}

std::string PathMemory::save(const std::filesystem::path& dir) const {
  if (auto st = security::replace_file(dir / kFileName, to_text(), 0600); !st) return st.error().message;
  return {};
}

std::string PathMemory::udp_path_key(const std::string& local, const std::string& remote_host) {
  return "udp " + local + " " + remote_host;
}

}  // namespace braid::transfer
