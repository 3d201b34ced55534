#include "emulator.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "emu/wire_size.hpp"
#include "model/spec_parser.hpp"

namespace netlab {
namespace {

constexpr std::size_t kMaxFrame = kVnetHeaderBytes + 65536;
constexpr int kReadBatch = 64;  // frames per device per wake-up, so one busy link cannot starve the rest

// epoll user data: link directions first, then the three service fds.
constexpr std::uint64_t kTimerTag = ~0ull;
constexpr std::uint64_t kSignalTag = ~0ull - 1;
constexpr std::uint64_t kControlTag = ~0ull - 2;

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool write_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace

Emulator::Emulator(const EmulatorOptions& options)
    : options_(options), lab_(options.links, options.seed), io_(options.links.size() * 2), scratch_(kMaxFrame) {}

std::unique_ptr<Emulator> Emulator::create(const EmulatorOptions& options, std::string& error) {
  std::unique_ptr<Emulator> emu(new Emulator(options));
  const int snd_ns = open(options.snd_netns.c_str(), O_RDONLY | O_CLOEXEC);
  const int rcv_ns = open(options.rcv_netns.c_str(), O_RDONLY | O_CLOEXEC);
  if (snd_ns < 0 || rcv_ns < 0) {
    error = "cannot open network namespace " + (snd_ns < 0 ? options.snd_netns : options.rcv_netns) + ": " +
            std::strerror(errno);
  }
  for (std::size_t i = 0; error.empty() && i < options.links.size(); ++i) {
    const LinkSpec& spec = options.links[i];
    Side side;
    side.snd = TunDevice::create("nl-" + spec.name, snd_ns, spec.mtu);
    side.rcv = TunDevice::create("nl-" + spec.name, rcv_ns, spec.mtu);
    for (const TunDevice* d : {&side.snd, &side.rcv})
      if (error.empty() && d->fd() < 0) error = d->error();
    emu->sides_.push_back(std::move(side));
  }
  if (snd_ns >= 0) close(snd_ns);
  if (rcv_ns >= 0) close(rcv_ns);
  if (error.empty() && !options.trace_path.empty() && !emu->trace_.open(options.trace_path))
    error = emu->trace_.error();
  if (error.empty()) emu->sync_gso();
  for (const Side& s : emu->sides_)
    for (const TunDevice* d : {&s.snd, &s.rcv})
      if (error.empty() && d->fd() >= 0 && !d->error().empty()) error = d->error();
  if (!error.empty()) return nullptr;
  return emu;
}

int Emulator::ingress_fd(std::size_t link, Dir dir) const {
  return dir == Dir::up ? sides_[link].snd.fd() : sides_[link].rcv.fd();
}

int Emulator::egress_fd(std::size_t link, Dir dir) const {
  return dir == Dir::up ? sides_[link].rcv.fd() : sides_[link].snd.fd();
}

TimePoint Emulator::now() const { return at(Duration{monotonic_ns() - start_ns_}); }

void Emulator::sync_gso() {
  for (std::size_t i = 0; i < sides_.size(); ++i) {
    for (Dir dir : {Dir::up, Dir::down}) {
      const bool want = lab_.wants_gso(i, dir);
      bool& have = sides_[i].gso[static_cast<int>(dir)];
      TunDevice& reader = dir == Dir::up ? sides_[i].snd : sides_[i].rcv;
      if (want != have && reader.set_gso(want)) have = want;
    }
  }
}

void Emulator::read_frames(std::size_t link, Dir dir, TimePoint t) {
  const int fd = ingress_fd(link, dir);
  for (int n = 0; n < kReadBatch; ++n) {
    const ssize_t got = read(fd, scratch_.data(), scratch_.size());
    if (got <= 0) return;  // EAGAIN: drained (errors on a TUN fd only mean "nothing now")
    const auto frame = std::span<const std::byte>(scratch_.data(), static_cast<std::size_t>(got));
    const WireSize ws = wire_size(frame);
    Packet p{ws.bytes, ws.packets, 0, std::vector<std::byte>(frame.begin(), frame.end())};
    ++io_[link * 2 + static_cast<std::size_t>(dir)].frames_read;
    trace_.record(t, 'i', link, dir == Dir::up, frame);
    lab_.handle_packet(link, dir, std::move(p), t);
  }
}

void Emulator::deliver_due(TimePoint t) {
  if (lab_.apply_due_events(t) > 0) sync_gso();  // a loss change may turn GSO on or off
  for (std::size_t i = 0; i < lab_.link_count(); ++i) {
    for (Dir dir : {Dir::up, Dir::down}) {
      const int fd = egress_fd(i, dir);
      IoCounters& io = io_[i * 2 + static_cast<std::size_t>(dir)];
      while (auto p = lab_.poll_delivery(i, dir, t)) {
        const TimePoint written = now();
        io.record_lateness(written - p->due);
        if (write(fd, p->data.data(), p->data.size()) < 0) ++io.write_errors;
        else trace_.record(written, 'o', i, dir == Dir::up, p->data);  // when it left, lateness and all
      }
    }
  }
}

void Emulator::arm_timer() {
  const auto next = lab_.poll_timeout();
  if (next == armed_) return;
  itimerspec spec{};
  if (next) {
    const std::int64_t abs_ns = start_ns_ + std::max<std::int64_t>(next->time_since_epoch().count(), 1);
    spec.it_value.tv_sec = abs_ns / 1'000'000'000;
    spec.it_value.tv_nsec = abs_ns % 1'000'000'000;
  }  // else all zero: disarm
  timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr);
  armed_ = next;
}

void Emulator::handle_control_line(const std::string& line, TimePoint t) {
  if (line.empty() || line[0] == '#') return;
  if (line == "stats") {
    report();
    return;
  }
  const auto events = parse_event(line);
  if (!events) {
    std::fprintf(stderr, "netlab-emu: control: %s\n", events.error.c_str());
    return;
  }
  for (const LinkEvent& e : *events.value) {
    if (const auto err = lab_.schedule(e, t); !err.empty())
      std::fprintf(stderr, "netlab-emu: control: %s\n", err.c_str());
  }
  std::fprintf(stderr, "netlab-emu: t=%.3f s: scheduled '%s'\n",
               static_cast<double>(t.time_since_epoch().count()) / 1e9, line.c_str());
}

void Emulator::read_control(TimePoint t) {
  char buf[4096];
  ssize_t got;
  while ((got = read(control_fd_, buf, sizeof buf)) > 0) control_buffer_.append(buf, static_cast<std::size_t>(got));
  std::size_t nl;
  while ((nl = control_buffer_.find('\n')) != std::string::npos) {
    handle_control_line(control_buffer_.substr(0, nl), t);
    control_buffer_.erase(0, nl + 1);
  }
}

void Emulator::report() {
  trace_.flush();  // `netlab stats` (SIGUSR1) and the exit: the trace is readable up to now
  const TimePoint t = now();
  const std::string text = stats_text(lab_, io_, t);
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
  ++report_seq_;
  if (!options_.stats_text_path.empty()) write_file_atomically(options_.stats_text_path, text);
  if (!options_.stats_json_path.empty())
    write_file_atomically(options_.stats_json_path, stats_json(lab_, io_, report_seq_, t).dump(2) + "\n");
}

int Emulator::run() {
  // Wake-ups are what set the delay accuracy: ask for timers to fire on time.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  if (options_.realtime) {
    sched_param sp{};
    sp.sched_priority = 10;  // above ordinary processes, below the kernel's own RT threads (50)
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
      std::fprintf(stderr, "netlab-emu: no real-time priority (%s); delays may stretch under load\n",
                   std::strerror(errno));
  }
  start_ns_ = monotonic_ns();
  if (trace_.enabled()) {
    timespec wall{};
    clock_gettime(CLOCK_REALTIME, &wall);
    trace_.header(static_cast<double>(wall.tv_sec) + static_cast<double>(wall.tv_nsec) / 1e9);
  }

  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) sigaddset(&signals, s);
  signal_fd_ = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (epoll_fd_ < 0 || timer_fd_ < 0 || signal_fd_ < 0) {
    std::perror("netlab-emu: epoll/timerfd/signalfd");
    return 1;
  }
  auto watch = [&](int fd, std::uint64_t tag) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    return epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) == 0;
  };
  bool ok = watch(timer_fd_, kTimerTag) && watch(signal_fd_, kSignalTag);
  for (std::size_t i = 0; ok && i < lab_.link_count(); ++i)
    for (Dir dir : {Dir::up, Dir::down}) ok = ok && watch(ingress_fd(i, dir), i * 2 + static_cast<std::size_t>(dir));
  if (!options_.control_fifo.empty()) {
    // O_RDWR keeps a writer open ourselves, so the FIFO never reports EOF
    // between two `netlab event` commands.
    control_fd_ = open(options_.control_fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    ok = ok && control_fd_ >= 0 && watch(control_fd_, kControlTag);
  }
  if (!ok) {
    std::perror("netlab-emu: setting up the event loop");
    return 1;
  }
  for (const LinkEvent& e : options_.events) lab_.schedule(e, at(Duration{0}));

  bool running = true;
  epoll_event ready[32];
  while (running) {
    arm_timer();
    const int n = epoll_wait(epoll_fd_, ready, 32, -1);
    if (n < 0 && errno != EINTR) {
      std::perror("netlab-emu: epoll_wait");
      return 1;
    }
    const TimePoint t = now();
    if (lab_.apply_due_events(t) > 0) sync_gso();
    for (int k = 0; k < n; ++k) {
      const std::uint64_t tag = ready[k].data.u64;
      if (tag == kTimerTag) {
        std::uint64_t expirations;
        if (read(timer_fd_, &expirations, sizeof expirations) > 0) armed_.reset();
      } else if (tag == kSignalTag) {
        signalfd_siginfo si{};
        while (read(signal_fd_, &si, sizeof si) == sizeof si) {
          if (si.ssi_signo == SIGUSR1) report();
          else running = false;
        }
      } else if (tag == kControlTag) {
        read_control(t);
      } else {
        read_frames(tag / 2, static_cast<Dir>(tag % 2), t);
      }
    }
    deliver_due(t);
  }
  report();
  return 0;
}

}  // namespace netlab
