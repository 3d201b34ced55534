#include "engine/udp/io_waiter.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

namespace braid::udp {

IoWaiter::IoWaiter() : wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

void IoWaiter::wake() {
  const uint64_t one = 1;
  (void)!::write(wake_fd_.get(), &one, sizeof one);
}

double IoWaiter::thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void IoWaiter::tune_thread() { (void)::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); }

void IoWaiter::wait(int socket_fd, bool want_write, Time deadline, const LaneClock& clock) {
  timespec ts{};
  timespec* timeout = nullptr;
  if (deadline != Time::never()) {
    const int64_t ns = (deadline - clock.now()).ns();
    if (ns <= 0) return;
    ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    timeout = &ts;
  }
  pollfd fds[2] = {{socket_fd, static_cast<short>(POLLIN | (want_write ? POLLOUT : 0)), 0},
                   {wake_fd_.get(), POLLIN, 0}};
  if (::ppoll(fds, 2, timeout, nullptr) > 0 && (fds[1].revents & POLLIN)) {
    uint64_t n = 0;
    (void)!::read(wake_fd_.get(), &n, sizeof n);
  }
}

}  // namespace braid::udp
