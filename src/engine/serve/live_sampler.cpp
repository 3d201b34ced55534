#include "engine/serve/live_sampler.hpp"

namespace braid::serve {

LiveSampler::~LiveSampler() { stop(); }

void LiveSampler::start(Source source, std::chrono::milliseconds period) {
  source_ = std::move(source);
  period_ = period;
  thread_ = std::thread([this] {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      sample(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      lock.lock();
      cv_.wait_for(lock, period_, [&] { return stopping_; });
    }
  });
}

void LiveSampler::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LiveSampler::sample(double now) {
  const auto transfers = source_();  // outside the lock: it takes the receiver's
  std::lock_guard lock(mu_);
  for (auto& [key, tr] : tracks_) tr.ended = true;  // unless seen again below
  for (const auto& lt : transfers) {
    Track& tr = tracks_[lt.key()];
    const double dt = tr.last_at < 0 ? 0 : now - tr.last_at;
    Sample s;
    s.t = lt.elapsed;
    s.window = dt;
    s.done = lt.done;
    for (const auto& row : transfer::group_by_path(lt.lanes)) {
      PathPoint p;
      p.path = row.local + " -> " + row.remote;
      p.lanes = row.alive;
      uint64_t& before = tr.path_bytes[p.path];
      p.rate = dt > 0 && row.bytes >= before ? static_cast<double>(row.bytes - before) / dt : 0;
      before = row.bytes;
      double rtt_sum = 0;
      size_t rtts = 0;
      for (const auto& l : lt.lanes)
        if (l.rtt_ms > 0 && transfer::address_of(l.local) == row.local && transfer::address_of(l.remote) == row.remote) {
          rtt_sum += l.rtt_ms;
          ++rtts;
        }
      p.rtt_ms = rtts ? rtt_sum / static_cast<double>(rtts) : 0;
      s.paths.push_back(std::move(p));
    }
    if (tr.last_at >= 0) tr.samples.push_back(std::move(s));  // the first look only sets the baseline
    while (tr.samples.size() > kMaxSamples) tr.samples.pop_front();
    tr.last = lt;
    tr.last_at = now;
    tr.ended = lt.ended;
    if (!lt.ended) tr.since_end = 0;
  }
  for (auto it = tracks_.begin(); it != tracks_.end();) {
    if (it->second.ended && ++it->second.since_end > kLinger) it = tracks_.erase(it);
    else ++it;
  }
  ++version_;
  cv_.notify_all();
}

nlohmann::json LiveSampler::to_json(const Track& t, bool whole) const {
  const auto& lt = t.last;
  double rate = 0;
  if (!t.samples.empty())
    for (const auto& p : t.samples.back().paths) rate += p.rate;
  const uint64_t left = lt.total > lt.done ? lt.total - lt.done : 0;
  nlohmann::json j = {{"id", lt.key()},     {"label", lt.label}, {"total", lt.total},
                      {"done", lt.done},    {"resumed", lt.resumed}, {"elapsed", lt.elapsed},
                      {"rate_bytes_per_sec", rate}, {"ended", t.ended}};
  j["eta_seconds"] = rate > 0 && !t.ended ? nlohmann::json(static_cast<double>(left) / rate) : nlohmann::json(nullptr);
  nlohmann::json samples = nlohmann::json::array();
  const size_t from = whole || t.samples.empty() ? 0 : t.samples.size() - 1;
  for (size_t i = from; i < t.samples.size(); ++i) {
    const Sample& s = t.samples[i];
    nlohmann::json paths = nlohmann::json::array();
    for (const auto& p : s.paths)
      paths.push_back({{"path", p.path}, {"lanes", p.lanes}, {"rate_bytes_per_sec", p.rate}, {"rtt_ms", p.rtt_ms}});
    samples.push_back({{"t", s.t}, {"window_s", s.window}, {"done", s.done}, {"paths", paths}});
  }
  j["samples"] = samples;
  return j;
}

nlohmann::json LiveSampler::snapshot() const {
  std::lock_guard lock(mu_);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [key, t] : tracks_) out.push_back(to_json(t, true));
  return out;
}

nlohmann::json LiveSampler::latest() const {
  std::lock_guard lock(mu_);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [key, t] : tracks_) out.push_back(to_json(t, false));
  return out;
}

uint64_t LiveSampler::version() const {
  std::lock_guard lock(mu_);
  return version_;
}

uint64_t LiveSampler::wait_newer(uint64_t seen, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return version_ > seen || stopping_; });
  return version_;
}

}  // namespace braid::serve
