#include "cli/signal_watch.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <ctime>
#include <thread>

namespace braid::cli {
namespace {

std::atomic<int> g_first{0};

}  // namespace

void SignalWatch::start(std::function<void(int)> on_signal, std::chrono::seconds grace) {
  sigset_t set;
  sigemptyset(&set);
  struct sigaction old {};
  if (::sigaction(SIGINT, nullptr, &old) != 0 || old.sa_handler != SIG_IGN) sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set, on_signal = std::move(on_signal), grace] {
    for (;;) {
      int sig = 0;
      if (g_first.load() == 0) {
        if (::sigwait(&set, &sig) != 0) continue;
        g_first = sig;
        std::thread([on_signal, sig] { on_signal(sig); }).detach();
        continue;
      }
      // After the first: a second signal, or the grace running out, ends the process now.
      const timespec wait{static_cast<time_t>(grace.count()), 0};
      siginfo_t info{};
      sig = ::sigtimedwait(&set, &info, &wait);
      if (sig < 0 && errno == EINTR) continue;
      ::_exit(128 + g_first.load());
    }
  }).detach();
}

int SignalWatch::received() { return g_first.load(); }

int SignalWatch::exit_code() {
  const int s = g_first.load();
  return s == 0 ? 0 : 128 + s;
}

const char* SignalWatch::name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "signal";
  }
}

}  // namespace braid::cli
