// SIGINT and SIGTERM for `braid send` and `braid recv`. start() blocks both
// in the calling thread — call it before any other thread exists, so every
// thread inherits the mask — and takes them on one thread of its own with
// sigwait: no code ever runs inside a signal handler.
//
// The first signal calls `on_signal` (on a thread of its own, so a second
// signal is seen even while it works), which asks the running session to
// stop: the CLI then writes its reports and exits with exit_code(). A second
// signal ends the process at once with that status; so does the first one
// if the process is still there `grace` later.
//
// A SIGINT the process was started with ignored (a background job of a
// non-interactive shell) stays ignored, as for any program.
#pragma once

#include <chrono>
#include <functional>

namespace braid::cli {

class SignalWatch {
 public:
  static void start(std::function<void(int sig)> on_signal, std::chrono::seconds grace = std::chrono::seconds(20));
  /// 0 before any signal, else the first one (SIGINT or SIGTERM).
  static int received();
  /// 128 + the first signal: 130 for SIGINT, 143 for SIGTERM (0 before any).
  static int exit_code();
  static const char* name(int sig);
};

}  // namespace braid::cli
