// The live display of `braid send` and `braid recv`: both ends show the same
// thing, one block per transfer on stderr —
//
//   send 'vm'  42% [#######.........]  26.4 MiB / 62.9 MiB  1.21 Gbit/s  ETA 240 ms
//     127.0.0.1 -> 127.0.0.1    9 lanes  604.2 Mbit/s   50%
//     127.0.0.2 -> 127.0.0.1    8 lanes  603.9 Mbit/s   50%
//
// Lanes are grouped per path (local address -> remote address, ports
// dropped), sorted by address so rows keep their place between redraws; a
// path's rate is measured here from the bytes its lanes delivered (the
// sender's acked, the receiver's verified bytes), the same way on both ends.
//
// Modes: on a terminal the block is redrawn in place (cursor up, erase line)
// within the terminal's width (TIOCGWINSZ, else 80 columns); every line is
// cut to width - 1, so no line ever wraps and the block's height is known.
// Not a terminal: silent, or with `deciles` one plain line per 10 %.
// `say()` prints a line above the block (notes, warnings) without tearing it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace braid::transfer {

/// One lane as the display sees it.
struct LiveLane {
  uint32_t id = 0;
  std::string local;   // "ADDR:PORT", "[V6]:PORT", or a stream lane's command / socket path
  std::string remote;
  uint64_t bytes = 0;  // useful bytes it delivered in this transfer
  bool alive = true;
  double rtt_ms = 0;  // the kernel's smoothed RTT of a TCP lane (TCP_INFO); 0: unknown
};

/// One transfer in flight, as either end knows it now.
struct LiveTransfer {
  std::string label;  // "send 'vm'", "recv 'laptop'"
  std::string id;     // tells transfers apart (default: the label)
  uint64_t total = 0;
  uint64_t done = 0;     // verified (receiver) or acked (sender), resumed bytes included
  uint64_t resumed = 0;  // of `done`, held from an earlier run: not in the rate
  double elapsed = 0;    // seconds since the transfer began
  std::vector<LiveLane> lanes;
  bool ended = false;  // finished (verified or failed): finish() it

  const std::string& key() const { return id.empty() ? label : id; }
};

/// One row of the display: the lanes that share a path.
struct PathRow {
  std::string local;   // address without port
  std::string remote;
  size_t lanes = 0;
  size_t alive = 0;
  uint64_t bytes = 0;
  double rate = 0;  // bytes/s, measured by the caller
};

/// "127.0.0.1:5000" -> "127.0.0.1", "[::1]:7878" -> "::1"; anything else as it is.
std::string address_of(const std::string& endpoint);
/// The lanes grouped by path, sorted by (local, remote); rates zero.
std::vector<PathRow> group_by_path(const std::vector<LiveLane>& lanes);
/// One frame of the block for `t` (pure): a header line, then a row per
/// path — at most `max_rows`, the rest summed up in one line. Every line is
/// ASCII and at most `width` columns.
std::vector<std::string> render_frame(const LiveTransfer& t, const std::vector<PathRow>& paths, double rate,
                                      size_t width, size_t max_rows = 8);

class LiveDisplay {
 public:
  enum class Mode {
    off,       // nothing (-q, or not a terminal)
    terminal,  // the block, redrawn in place
    deciles,   // one line per 10 % (not a terminal, -v)
  };
  /// What stderr gets: off with `quiet`, the block on a terminal, else one
  /// line per 10 % with `verbose`, else nothing.
  static Mode mode_for(int fd, bool quiet, bool verbose);

  explicit LiveDisplay(Mode mode, int fd = 2);
  ~LiveDisplay();
  LiveDisplay(const LiveDisplay&) = delete;
  LiveDisplay& operator=(const LiveDisplay&) = delete;

  Mode mode() const { return mode_; }
  /// Draws the transfers in flight now (any thread; rates are measured
  /// between calls, so call it every ~200 ms).
  void update(const std::vector<LiveTransfer>& transfers);
  /// The transfer ended: its last frame stays on screen (100 % if it
  /// completed), the cursor goes below it, and it is forgotten.
  void finish(const LiveTransfer& last);
  /// A line above the block, which is then drawn again; with no display
  /// alive, plainly on stderr.
  static void say(const std::string& line);

 private:
  using Clock = std::chrono::steady_clock;
  struct Meter {
    uint64_t bytes = 0;
    Clock::time_point at{};
    double rate = 0;
    bool started = false;
  };
  double measure(const std::string& key, uint64_t bytes, Clock::time_point now);
  std::vector<std::string> frame_locked(const LiveTransfer& t, Clock::time_point now, size_t width, bool last);
  void draw_locked(const std::vector<std::string>& lines);
  void erase_locked();
  void write_locked(const std::string& s);
  size_t width() const;

  Mode mode_;
  int fd_;
  std::mutex mu_;
  std::vector<std::string> shown_;           // the block on screen now (terminal)
  std::map<std::string, Meter> meters_;      // per transfer and per path
  std::map<std::string, int> next_decile_;   // per transfer (deciles)
};

}  // namespace braid::transfer
