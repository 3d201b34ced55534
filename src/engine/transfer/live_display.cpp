#include "engine/transfer/live_display.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <tuple>

#include "core/units.hpp"
#include "core/units_parse.hpp"

namespace braid::transfer {
namespace {

// The display alive in this process, for say() (one per process: the CLI's).
std::mutex g_active_mu;
LiveDisplay* g_active = nullptr;

constexpr size_t kDefaultWidth = 80;
constexpr size_t kMaxBar = 30;
constexpr size_t kMinBar = 8;

std::string size_text(uint64_t b) { return format_size(Bytes(b)); }
std::string rate_text(double bytes_per_sec) { return format_rate(Rate::bytes_per_sec(std::max(0.0, bytes_per_sec))); }

// `s` cut to `n` columns, the middle elided (addresses differ at both ends).
std::string elide(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  if (n <= 2) return s.substr(0, n);
  const size_t head = (n - 2) / 2;
  return s.substr(0, head) + ".." + s.substr(s.size() - (n - 2 - head));
}

std::string pad_right(std::string s, size_t n) {
  if (s.size() < n) s.append(n - s.size(), ' ');
  return s;
}

std::string pad_left(const std::string& s, size_t n) { return s.size() < n ? std::string(n - s.size(), ' ') + s : s; }

std::string lanes_text(const PathRow& p) {
  const std::string n = p.alive == p.lanes ? std::to_string(p.lanes) : std::to_string(p.alive) + "/" + std::to_string(p.lanes);
  return n + (p.lanes == 1 ? " lane" : " lanes");
}

}  // namespace

std::string address_of(const std::string& endpoint) {
  if (!endpoint.empty() && endpoint.front() == '[') {
    const auto close = endpoint.find(']');
    if (close != std::string::npos) return endpoint.substr(1, close - 1);
  }
  const auto colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon + 1 == endpoint.size()) return endpoint;
  if (endpoint.find(':') != colon) return endpoint;  // a bare IPv6 address, or a command with colons
  for (size_t i = colon + 1; i < endpoint.size(); ++i)
    if (endpoint[i] < '0' || endpoint[i] > '9') return endpoint;
  return endpoint.substr(0, colon);
}

std::vector<PathRow> group_by_path(const std::vector<LiveLane>& lanes) {
  std::map<std::pair<std::string, std::string>, PathRow> rows;
  for (const auto& l : lanes) {
    const std::string local = address_of(l.local), remote = address_of(l.remote);
    PathRow& r = rows[{local, remote}];
    r.local = local;
    r.remote = remote;
    ++r.lanes;
    r.alive += l.alive;
    r.bytes += l.bytes;
  }
  std::vector<PathRow> out;
  for (auto& [key, row] : rows) out.push_back(std::move(row));
  return out;
}

std::vector<std::string> render_frame(const LiveTransfer& t, const std::vector<PathRow>& paths, double rate,
                                      size_t width, size_t max_rows) {
  std::vector<std::string> out;
  // The header: label, percent, bar, sizes, rate, ETA — the bar and then the
  // least needed figures give way when the line does not fit.
  const double frac = t.total ? std::min(1.0, static_cast<double>(t.done) / static_cast<double>(t.total)) : 1.0;
  const std::string pct = pad_left(std::to_string(static_cast<int>(frac * 100)) + "%", 4);
  const std::string sizes = size_text(t.done) + " / " + size_text(t.total);
  const uint64_t sent = t.done - std::min(t.done, t.resumed);
  const double average = t.elapsed > 0 ? static_cast<double>(sent) / t.elapsed : 0;
  std::string eta;
  if (t.done >= t.total) eta = "in " + format_duration(Duration::seconds_f(t.elapsed));
  else if (average > 0)
    eta = "ETA " + format_duration(Duration::seconds_f(static_cast<double>(t.total - t.done) / average));
  std::vector<std::string> tail = {sizes, rate_text(rate), eta};
  for (;;) {
    std::string right;
    for (const auto& p : tail)
      if (!p.empty()) right += "  " + p;
    const size_t fixed = t.label.size() + 1 + pct.size() + right.size();
    if (fixed + 3 + kMinBar <= width) {
      const size_t bar = std::min(kMaxBar, width - fixed - 3);
      const auto filled = static_cast<size_t>(frac * static_cast<double>(bar));
      out.push_back(t.label + " " + pct + " [" + std::string(filled, '#') + std::string(bar - filled, '.') + "]" +
                    right);
      break;
    }
    if (fixed <= width || tail.empty()) {
      out.push_back((t.label + " " + pct + right).substr(0, width));
      break;
    }
    tail.pop_back();  // ETA first, then the rate, then the sizes
  }

  if (paths.empty()) return out;
  uint64_t crossed = 0;
  for (const auto& p : paths) crossed += p.bytes;
  // A row: "  LOCAL -> REMOTE  N lanes  RATE  SHARE"; the addresses take what is left.
  auto suffix = [&](const PathRow& p) {
    const int share = crossed ? static_cast<int>(100.0 * static_cast<double>(p.bytes) / static_cast<double>(crossed) + 0.5) : 0;
    return "  " + pad_left(lanes_text(p), 9) + "  " + pad_left(p.alive ? rate_text(p.rate) : "closed", 12) + "  " +
           pad_left(std::to_string(share) + "%", 4);
  };
  const size_t shown = paths.size() <= max_rows ? paths.size() : max_rows - 1;
  size_t want_local = 0, want_remote = 0;
  for (size_t i = 0; i < shown; ++i) {
    want_local = std::max(want_local, paths[i].local.size());
    want_remote = std::max(want_remote, paths[i].remote.size());
  }
  const size_t suffix_len = suffix(paths[0]).size();
  const size_t room = width > 2 + 4 + suffix_len ? width - 2 - 4 - suffix_len : 0;
  size_t local_w = want_local, remote_w = want_remote;
  if (local_w + remote_w > room) {  // share the room, neither side below half unless the other needs less
    local_w = std::min(want_local, std::max(room / 2, room - std::min(want_remote, room)));
    remote_w = room - local_w;
  }
  for (size_t i = 0; i < shown; ++i) {
    const PathRow& p = paths[i];
    std::string line = "  " + pad_right(elide(p.local, local_w), local_w) + " -> " +
                       pad_right(elide(p.remote, remote_w), remote_w) + suffix(p);
    out.push_back(line.substr(0, width));
  }
  if (shown < paths.size()) {
    PathRow rest;
    double rest_rate = 0;
    for (size_t i = shown; i < paths.size(); ++i) {
      rest.lanes += paths[i].lanes;
      rest.alive += paths[i].alive;
      rest.bytes += paths[i].bytes;
      rest_rate += paths[i].rate;
    }
    rest.rate = rest_rate;
    const std::string head = "  + " + std::to_string(paths.size() - shown) + " more paths";
    out.push_back((pad_right(head, 2 + local_w + 4 + remote_w) + suffix(rest)).substr(0, width));
  }
  return out;
}

// ---- the display ----------------------------------------------------------------

LiveDisplay::Mode LiveDisplay::mode_for(int fd, bool quiet, bool verbose) {
  if (quiet) return Mode::off;
  if (::isatty(fd) == 1) return Mode::terminal;
  return verbose ? Mode::deciles : Mode::off;
}

LiveDisplay::LiveDisplay(Mode mode, int fd) : mode_(mode), fd_(fd) {
  if (mode_ == Mode::off) return;
  std::lock_guard lock(g_active_mu);
  g_active = this;
}

LiveDisplay::~LiveDisplay() {
  std::lock_guard lock(g_active_mu);
  if (g_active == this) g_active = nullptr;
}

size_t LiveDisplay::width() const {
  winsize ws{};
  if (::ioctl(fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return kDefaultWidth;
}

void LiveDisplay::write_locked(const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd_, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a closed terminal: nothing to show it on
    off += static_cast<size_t>(n);
  }
}

double LiveDisplay::measure(const std::string& key, uint64_t bytes, Clock::time_point now) {
  Meter& m = meters_[key];
  if (!m.started) {
    m = Meter{bytes, now, 0, true};
    return 0;
  }
  const double dt = std::chrono::duration<double>(now - m.at).count();
  if (dt < 0.1) return m.rate;  // too short an interval to say anything new
  const double inst = static_cast<double>(bytes >= m.bytes ? bytes - m.bytes : 0) / dt;
  m.rate = m.rate > 0 ? 0.6 * inst + 0.4 * m.rate : inst;  // smooth enough to read, quick to follow a change
  m.bytes = bytes;
  m.at = now;
  return m.rate;
}

std::vector<std::string> LiveDisplay::frame_locked(const LiveTransfer& t, Clock::time_point now, size_t width,
                                                   bool last) {
  std::vector<PathRow> paths = group_by_path(t.lanes);
  const uint64_t sent = t.done - std::min(t.done, t.resumed);
  if (last && t.elapsed > 0) {  // the last frame: rates over the whole transfer, not the last moment
    for (auto& p : paths) p.rate = static_cast<double>(p.bytes) / t.elapsed;
    return render_frame(t, paths, static_cast<double>(sent) / t.elapsed, width);
  }
  for (auto& p : paths) p.rate = measure(t.key() + "|" + p.local + "|" + p.remote, p.bytes, now);
  return render_frame(t, paths, measure(t.key(), sent, now), width);
}

void LiveDisplay::erase_locked() {
  if (shown_.empty()) return;
  std::string s = "\r";
  if (shown_.size() > 1) s += "\x1b[" + std::to_string(shown_.size() - 1) + "A";
  s += "\x1b[J";
  write_locked(s);
  shown_.clear();
}

void LiveDisplay::draw_locked(const std::vector<std::string>& lines) {
  std::string s = "\r";
  if (shown_.size() > 1) s += "\x1b[" + std::to_string(shown_.size() - 1) + "A";
  for (size_t i = 0; i < lines.size(); ++i) {
    s += lines[i] + "\x1b[K";
    if (i + 1 < lines.size()) s += "\n";
  }
  s += "\x1b[J";  // a shorter block than the last: nothing of it stays below
  write_locked(s);
  shown_ = lines;
}

void LiveDisplay::update(const std::vector<LiveTransfer>& transfers) {
  if (mode_ == Mode::off) return;
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  if (mode_ == Mode::deciles) {
    for (const auto& t : transfers) {
      int& next = next_decile_.try_emplace(t.key(), 1).first->second;
      const double rate = measure(t.key(), t.done - std::min(t.done, t.resumed), now);
      const uint64_t total = std::max<uint64_t>(t.total, 1);
      if (next > 10 || t.done * 10 < total * static_cast<uint64_t>(next)) continue;
      while (next <= 10 && t.done * 10 >= total * static_cast<uint64_t>(next)) ++next;
      write_locked("braid: " + t.label + ": " + std::to_string((next - 1) * 10) + "% (" + size_text(t.done) + " of " +
                   size_text(t.total) + ", " + rate_text(rate) + ")\n");
    }
    return;
  }
  const size_t w = width();
  std::vector<std::string> lines;
  for (const auto& t : transfers) {
    auto f = frame_locked(t, now, w - 1, false);
    lines.insert(lines.end(), f.begin(), f.end());
  }
  if (lines.empty()) return erase_locked();
  draw_locked(lines);
}

void LiveDisplay::finish(const LiveTransfer& last) {
  if (mode_ == Mode::off) return;
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  if (mode_ == Mode::deciles) {
    const int next = next_decile_.count(last.key()) ? next_decile_[last.key()] : 1;
    if (next <= 10 && last.total && last.done >= last.total)
      write_locked("braid: " + last.label + ": 100% (" + size_text(last.done) + ")\n");
  } else {
    erase_locked();
    const auto lines = frame_locked(last, now, width() - 1, true);
    std::string s;
    for (const auto& l : lines) s += l + "\x1b[K\n";
    write_locked(s);
  }
  next_decile_.erase(last.key());
  for (auto it = meters_.begin(); it != meters_.end();)
    it = it->first == last.key() || it->first.rfind(last.key() + "|", 0) == 0 ? meters_.erase(it) : std::next(it);
}

void LiveDisplay::say(const std::string& line) {
  std::lock_guard active_lock(g_active_mu);
  LiveDisplay* d = g_active;
  if (!d || d->mode_ != Mode::terminal) {
    const std::string s = line + "\n";
    (void)!::write(2, s.data(), s.size());
    return;
  }
  std::lock_guard lock(d->mu_);
  const auto block = d->shown_;
  d->erase_locked();
  d->write_locked(line + "\n");
  if (!block.empty()) d->draw_locked(block);
}

}  // namespace braid::transfer
