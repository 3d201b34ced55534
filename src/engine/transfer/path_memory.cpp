#include "engine/transfer/path_memory.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/security/files.h"

namespace braid::transfer {

namespace {
constexpr const char* kFileName = "path-figures.json";
// Above any protocol braid will have: a bound on what a damaged file may say.
constexpr uint64_t kMaxProtocol = 1u << 16;

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
  if (doc.contains("protocols") && doc["protocols"].is_object())
    for (const auto& [peer, p] : doc["protocols"].items()) {
      if (m.protocols_.size() >= kMaxPeers || !p.is_object()) continue;
      const auto version = p.value("version", nlohmann::json());
      const auto said = p.value("said", nlohmann::json());
      const auto at = p.value("at", nlohmann::json());
      // A receiver newer than this binary is kept as it said (joins take the
      // older of the two); 0 or an absurd number is no knowledge.
      if (!version.is_number_unsigned() || !said.is_boolean() || !at.is_number_integer()) continue;
      const auto v = version.get<uint64_t>();
      if (v == 0 || v > kMaxProtocol) continue;
      m.protocols_[peer] = {{static_cast<uint32_t>(v), said.get<bool>()}, at.get<int64_t>()};
    }
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

std::optional<wire::PeerProtocol> PathMemory::protocol(const std::string& peer) const {
  const auto p = protocols_.find(peer);
  if (p == protocols_.end()) return std::nullopt;
  return p->second.protocol;
}

bool PathMemory::remember_protocol(const std::string& peer, const wire::PeerProtocol& spoken, int64_t now_unix) {
  auto [it, fresh] = protocols_.try_emplace(peer, Spoken{spoken, now_unix});
  if (!fresh) {
    // Written again once a day at most, so that the least recently met go first.
    if (it->second.protocol == spoken && now_unix >= it->second.at && now_unix - it->second.at < kMaxAgeSeconds)
      return false;
    it->second = {spoken, now_unix};
  }
  while (protocols_.size() > kMaxPeers)
    protocols_.erase(std::min_element(protocols_.begin(), protocols_.end(),
                                      [](const auto& a, const auto& b) { return a.second.at < b.second.at; }));
  return true;
}

std::string PathMemory::to_text() const {
  nlohmann::json peers = nlohmann::json::object();
  for (const auto& [peer, paths] : peers_) {
    nlohmann::json ps = nlohmann::json::object();
    for (const auto& [path, f] : paths)
      ps[path] = {{"rate_bytes_per_sec", f.rate_bytes_per_sec}, {"rtt_us", f.rtt_us}, {"at", f.at}};
    peers[peer] = ps;
  }
  nlohmann::json protocols = nlohmann::json::object();
  for (const auto& [peer, p] : protocols_)
    protocols[peer] = {{"version", p.protocol.version}, {"said", p.protocol.said}, {"at", p.at}};
  // Version 1 still: a binary that knows no "protocols" reads the peers and skips them.
  return nlohmann::json{{"version", 1}, {"peers", peers}, {"protocols", protocols}}.dump(1) + "\n";
}

std::string PathMemory::save(const std::filesystem::path& dir) const {
  if (auto st = security::replace_file(dir / kFileName, to_text(), 0600); !st) return st.error().message;
  return {};
}

namespace {
std::string path_key(const char* kind, const std::string& local, const std::string& remote_host) {
  return std::string(kind) + " " + local + " " + remote_host;
}
}  // namespace

std::string PathMemory::udp_path_key(const std::string& local, const std::string& remote_host) {
  return path_key("udp", local, remote_host);
}

std::string PathMemory::tcp_path_key(const std::string& local, const std::string& remote_host) {
  return path_key("tcp", local, remote_host);
}

}  // namespace braid::transfer
