#include "sim/scenario.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/chunk_plan.hpp"
#include "core/units_parse.hpp"

namespace braid::sim {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) pos = s.size();
    out.push_back(s.substr(start, pos - start));
    start = pos + 1;
  }
  return out;
}

std::optional<double> parse_probability(std::string_view v) {
  std::string str(v);
  char* end = nullptr;
  const double p = std::strtod(str.c_str(), &end);
  if (end != str.c_str() + str.size() || p < 0 || p >= 1) return std::nullopt;
  return p;
}

}  // namespace

std::string parse_lane(std::string_view spec, LaneSpec& out) {
  out = LaneSpec{};
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos || colon == 0)
    return "lane '" + std::string(spec) + "': expected NAME:rate=RATE,rtt=TIME[,...]";
  out.name = std::string(spec.substr(0, colon));
  bool have_rate = false, have_rtt = false;
  for (std::string_view kv : split(spec.substr(colon + 1), ',')) {
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) return "lane '" + out.name + "': expected key=value, got '" + std::string(kv) + "'";
    const std::string_view key = kv.substr(0, eq), val = kv.substr(eq + 1);
    const std::string bad = "lane '" + out.name + "': bad " + std::string(key) + " '" + std::string(val) + "'";
    if (key == "rate") {
      auto r = parse_rate(val);
      if (!r || r->is_zero()) return bad + " (e.g. 250Mbit/s, 19.1MB/s)";
      out.rate = *r;
      have_rate = true;
    } else if (key == "rtt") {
      auto d = parse_duration(val);
      if (!d) return bad + " (e.g. 8ms)";
      out.rtt = *d;
      have_rtt = true;
    } else if (key == "hint") {
      auto r = parse_rate(val);
      if (!r || r->is_zero()) return bad;
      out.hint = *r;
    } else if (key == "jitter") {
      auto d = parse_duration(val);
      if (!d) return bad;
      out.jitter = *d;
    } else if (key == "loss") {
      auto p = parse_probability(val);
      if (!p) return bad + " (a probability in [0, 1))";
      out.loss = *p;
    } else if (key == "ackloss") {
      auto p = parse_probability(val);
      if (!p) return bad + " (a probability in [0, 1))";
      out.ack_loss = *p;
    } else if (key == "sndbuf") {
      auto b = parse_size(val);
      if (!b) return bad;
      out.sndbuf = *b;
    } else if (key == "iw") {
      auto b = parse_size(val);
      if (!b || b->count() == 0) return bad + " (the initial window, e.g. 14480B or 64KiB)";
      out.initial_window = *b;
    } else if (key == "frame") {
      auto b = parse_size(val);
      if (!b) return bad + " (the receiver's frame, e.g. 256KiB)";
      out.frame = *b;
    } else if (key == "rto") {
      auto d = parse_duration(val);
      if (!d || d->ns() <= 0) return bad + " (the first retransmission timeout, e.g. 220ms)";
      out.rto = *d;
    } else if (key == "noise") {
      auto p = parse_probability(val);
      if (!p) return bad + " (a fraction in [0, 1), e.g. 0.2 for ±20 %)";
      out.rate_noise = *p;
    } else {
      return "lane '" + out.name + "': unknown key '" + std::string(key) + "' (rate, rtt, hint, jitter, loss, ackloss, sndbuf, iw, noise, frame, rto)";
    }
  }
  if (!have_rate || !have_rtt) return "lane '" + out.name + "': rate= and rtt= are required";
  return {};
}

std::string parse_event(std::string_view spec, EventSpec& out) {
  out = EventSpec{};
  bool have_at = false, have_kind = false;
  for (std::string_view kv : split(spec, ',')) {
    const size_t eq = kv.find('=');
    const std::string_view key = kv.substr(0, eq);
    const std::string_view val = eq == std::string_view::npos ? std::string_view{} : kv.substr(eq + 1);
    if (key == "at") {
      auto d = parse_duration(val);
      if (!d) return "event '" + std::string(spec) + "': bad time '" + std::string(val) + "'";
      out.at = *d;
      have_at = true;
    } else if (key == "lane") {
      out.lane = std::string(val);
    } else if (key == "rate") {
      auto r = parse_rate(val);
      if (!r) return "event '" + std::string(spec) + "': bad rate '" + std::string(val) + "'";
      out.kind = EventKind::rate;
      out.rate = *r;
      have_kind = true;
    } else if (key == "down" || key == "up" || key == "gone") {
      out.kind = key == "down" ? EventKind::down : key == "up" ? EventKind::up : EventKind::gone;
      have_kind = true;
    } else {
      return "event '" + std::string(spec) + "': unknown part '" + std::string(kv) + "' (at=, lane=, rate=, down, up, gone)";
    }
  }
  if (!have_at || out.lane.empty() || !have_kind)
    return "event '" + std::string(spec) + "': needs at=TIME, lane=NAME and one of rate=RATE, down, up, gone";
  if (out.kind == EventKind::rate && out.rate.is_zero())
    return "event '" + std::string(spec) + "': a rate of zero is an outage; say 'down'";
  return {};
}

std::string parse_scenario_file(const std::string& text, Scenario& out) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string key, value;
    if (!(words >> key)) continue;
    std::getline(words >> std::ws, value);
    const std::string where = "line " + std::to_string(n) + ": ";
    if (key == "name") {
      out.name = value;
    } else if (key == "size" || key == "chunk") {
      auto b = parse_size(value);
      if (!b) return where + "bad " + key + " '" + value + "'";
      (key == "size" ? out.size : out.chunk) = *b;
    } else if (key == "seed") {
      out.seed = std::strtoull(value.c_str(), nullptr, 10);
    } else if (key == "lane") {
      LaneSpec l;
      if (auto e = parse_lane(value, l); !e.empty()) return where + e;
      out.lanes.push_back(l);
    } else if (key == "event") {
      EventSpec e;
      if (auto err = parse_event(value, e); !err.empty()) return where + err;
      out.events.push_back(e);
    } else {
      return where + "unknown key '" + key + "' (name, size, chunk, seed, lane, event)";
    }
  }
  return {};
}

std::string load_scenario_file(const std::string& path, Scenario& out) {
  std::ifstream in(path);
  if (!in) return "cannot read scenario file '" + path + "'";
  std::stringstream text;
  text << in.rdbuf();
  if (auto e = parse_scenario_file(text.str(), out); !e.empty()) return path + ": " + e;
  return {};
}

std::string validate(const Scenario& s) {
  if (s.lanes.empty()) return "no lanes: give at least one --lane";
  if (s.size.count() == 0) return "--size must be more than 0 bytes";
  if (s.chunk < core::ChunkPlan::kMinChunk || s.chunk > core::ChunkPlan::kMaxChunk)
    return "--chunk must be between 64KiB and 64MiB";
  for (size_t i = 0; i < s.lanes.size(); ++i)
    for (size_t j = i + 1; j < s.lanes.size(); ++j)
      if (s.lanes[i].name == s.lanes[j].name) return "two lanes are named '" + s.lanes[i].name + "'";
  for (const auto& e : s.events) {
    const bool known = std::any_of(s.lanes.begin(), s.lanes.end(), [&](const LaneSpec& l) { return l.name == e.lane; });
    if (!known) return "event names lane '" + e.lane + "', which is not defined";
  }
  return {};
}

namespace {

// A bound in seconds as a Duration; one past Duration::infinite() is
// infinite (a slow lane and a big size reach 10^19 s and beyond, where
// Duration::seconds_f's cast to int64 is undefined).
Duration bound_at(double seconds) {
  if (!(seconds < Duration::infinite().to_seconds())) return Duration::infinite();
  return Duration::seconds_f(seconds);
}

// Piecewise-constant total rate over time, integrated until `size` bytes.
Duration bound_over(const Scenario& s, const std::vector<size_t>& lanes) {
  struct State {
    double rate;
    bool up = true;
    bool gone = false;
  };
  std::vector<State> st(s.lanes.size());
  for (size_t i = 0; i < s.lanes.size(); ++i) st[i].rate = s.lanes[i].rate.bytes_per_second();
  std::vector<EventSpec> events = s.events;
  std::stable_sort(events.begin(), events.end(), [](const EventSpec& a, const EventSpec& b) { return a.at < b.at; });
  auto total_rate = [&] {
    double r = 0;
    for (size_t i : lanes)
      if (st[i].up && !st[i].gone) r += st[i].rate;
    return r;
  };
  double left = s.size.as_double(), t = 0;
  for (const auto& e : events) {
    const double r = total_rate(), until = e.at.to_seconds();
    if (until > t) {
      if (r > 0 && left <= r * (until - t)) return bound_at(t + left / r);
      left -= r * (until - t);
      t = until;
    }
    for (size_t i = 0; i < s.lanes.size(); ++i) {
      if (s.lanes[i].name != e.lane) continue;
      if (e.kind == EventKind::rate) st[i].rate = e.rate.bytes_per_second();
      if (e.kind == EventKind::down) st[i].up = false;
      if (e.kind == EventKind::up) st[i].up = true;
      if (e.kind == EventKind::gone) st[i].gone = true;
    }
  }
  const double r = total_rate();
  if (r <= 0) return Duration::infinite();
  return bound_at(t + left / r);
}

}  // namespace

Duration fluid_bound(const Scenario& s) {
  std::vector<size_t> all(s.lanes.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return bound_over(s, all);
}

Duration fluid_bound_single(const Scenario& s, size_t lane) { return bound_over(s, {lane}); }

}  // namespace braid::sim
