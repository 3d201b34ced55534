#include "engine/transfer/receiver.hpp"

#include "engine/lanes/host_network.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <system_error>

#include "engine/files/receive_tree.hpp"
#include "engine/lanes/tcp.hpp"
#include "engine/lanes/unix_socket.hpp"
#include "engine/transfer/code_text.hpp"
#include "engine/transfer/exit_codes.hpp"

namespace braid::transfer {

namespace {

// Accepts per listener per wake: one flooded listener cannot starve the rest.
constexpr int kMaxAcceptsPerWake = 64;
// The accept loop wakes at least this often: it enforces handshake
// deadlines the workers set meanwhile.
constexpr auto kLoopTick = std::chrono::milliseconds(250);
// A lane's first frame is its lane_join (8 bytes of payload); the accept loop
// waits until the whole frame is buffered, so the lane's reader thread never
// blocks on a peer that sent a header and stopped.
constexpr uint32_t kMaxJoinPayload = 1024;
// Reports of finished sessions kept for --json: a receiver left running for
// months must not grow by a report per session forever.
constexpr size_t kMaxKeptReports = 1000;

bool set_blocking(int fd) {
  const int fl = ::fcntl(fd, F_GETFL);
  return fl >= 0 && ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0;
}

void set_rcvlowat(int fd, int bytes) { ::setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes); }

bool is_resource_error(int err) { return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM; }

}  // namespace

std::variant<std::unique_ptr<Receiver>, Failure> Receiver::start(const ReceiveOptions& opts, EventLog& log) {
  std::optional<security::PairingCode> code;
  if (opts.code) {
    auto c = pairing_code_from_text(*opts.code);
    if (!c.code) return Failure{kExitUsage, "bad --code: " + c.error};
    code.emplace(*c.code);
  } else {
    auto c = security::PairingCode::generate();
    if (!c) return Failure{kExitFailure, c.error().message};
    code.emplace(c.value());
  }
  std::unique_ptr<Receiver> r(new Receiver(log, *code));
  r->opts_ = opts;
  r->opts_.max_sessions = std::max<size_t>(1, opts.max_sessions);
  std::string error;
  r->host_ = LocalHost::load(opts.config_dir, error);
  if (!r->host_) return Failure{kExitFailure, error};

  // The target: created if missing, and it must take new files.
  std::error_code ec;
  std::filesystem::create_directories(opts.dir, ec);
  r->root_fd_.reset(::open(opts.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!r->root_fd_.valid())
    return Failure{kExitNotWritable, "cannot open the target directory '" + opts.dir + "': " + std::strerror(errno)};
  if (auto why = files::check_writable_dir(r->root_fd_.get(), opts.dir); !why.empty())
    return Failure{kExitNotWritable, why};
  for (const auto& [label, dir] : opts.peer_dirs) {
    std::filesystem::create_directories(dir, ec);
    security::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid())
      return Failure{kExitNotWritable, "cannot open the target directory '" + dir + "' of '" + label +
                                           "': " + std::strerror(errno)};
    if (auto why = files::check_writable_dir(fd.get(), dir); !why.empty()) return Failure{kExitNotWritable, why};
    r->peer_root_fds_[label] = std::move(fd);
  }

  std::vector<std::string> wanted = opts.listen;
  bool defaulted = wanted.empty();
  if (defaulted) wanted = {"[::]:" + std::to_string(kDefaultPort)};
  for (const auto& w : wanted) {
    if (const std::string path = lanes::unix_path_of(w); !path.empty()) {
      // Lanes over a Unix-domain socket (send --lane unix:PATH): not
      // advertised, for the senders on this host that name it.
      auto fd = lanes::listen_unix(path, error);
      if (!fd.valid()) return Failure{kExitFailure, error};
      ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
      r->unix_paths_.push_back(path);
      r->listeners_.push_back(std::move(fd));
      continue;
    }
    auto ep = lanes::parse_numeric_endpoint(w, kDefaultPort);
    if (!ep) return Failure{kExitUsage, "bad --listen '" + w + "' (ADDR:PORT, e.g. 127.0.0.1:7878 or [::1]:0, or unix:PATH)"};
    auto fd = lanes::listen_tcp(*ep, error);
    if (!fd.valid() && defaulted) {  // no IPv6 on this host: IPv4 only
      ep = lanes::parse_numeric_endpoint("0.0.0.0:" + std::to_string(kDefaultPort), kDefaultPort);
      fd = lanes::listen_tcp(*ep, error);
    }
    if (!fd.valid()) return Failure{kExitFailure, error};
    // Non-blocking: a connection reset between poll and accept must not stall the loop.
    ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
    r->bound_.push_back(lanes::local_endpoint_of(fd.get()));
    r->listeners_.push_back(std::move(fd));
  }
  r->advertised_ = r->addresses_to_advertise();
  r->wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!r->wake_.valid()) return Failure{kExitFailure, std::string("eventfd: ") + std::strerror(errno)};
  r->reserve_fd_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  rlimit nofile{};
  const size_t fds = ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY
                         ? static_cast<size_t>(nofile.rlim_cur)
                         : 1024;
  r->max_pending_ = std::clamp<size_t>(fds / 4, 1, std::max<size_t>(1, opts.limits.max_pending));
  r->max_queued_handshakes_ = std::clamp<size_t>(fds / 8, 1, std::max<size_t>(1, opts.limits.max_queued_handshakes));
  log.write("status", {{"status", "listening"}, {"addresses", r->advertised_}});
  return r;
}

Receiver::~Receiver() {
  stop();
  {
    std::lock_guard lock(mu_);
    hs_cv_.notify_all();
  }
  for (auto& t : hs_workers_)
    if (t.joinable()) t.join();
  std::list<Running> left;
  {
    std::lock_guard lock(mu_);
    left.swap(running_);
  }
  for (auto& r : left)
    if (r.thread.joinable()) r.thread.join();
  for (const auto& p : unix_paths_) ::unlink(p.c_str());  // ours: nobody listens there now
}

Receiver::Receiver(EventLog& log, security::PairingCode code)
    : log_(log),
      code_(std::make_unique<security::OneTimeCode>(
          std::move(code), [this](const security::OneTimeCode::Changed& c) { code_changed(c); })) {}

std::string Receiver::code() const {
  auto c = code_->current();
  return c ? c->display() : std::string();
}

// Called by a handshake worker, under the code keeper's lock (so the codes
// are printed in the order they became live): the new code goes where the
// first one went, stdout.
void Receiver::code_changed(const security::OneTimeCode::Changed& c) {
  const bool spent = c.why == security::CodeLedger::Change::spent;
  const bool closed = c.why == security::CodeLedger::Change::closed;
  log_.write("pairing_code", {{"status", spent ? "spent" : closed ? "closed" : "retired"}, {"failures", c.failures}});
  if (opts_.on_code_change) opts_.on_code_change(c.next && !closed ? c.next->display() : std::string());
  if (opts_.quiet || (spent && opts_.once)) return;  // --once: this receiver pairs no one else
  if (closed) {
    std::cerr << "braid: " << security::CodeLedger::kMaxRetiredCodes * security::CodeLedger::kMaxFailures
              << " wrong pairing attempts: no new code; only known peers can connect until braid recv restarts"
              << std::endl;
    return;
  }
  if (c.next == nullptr) {
    std::cerr << "braid: no new pairing code could be made; only known peers can connect" << std::endl;
    return;
  }
  std::cout << "braid: code " << c.next->display()
            << (spent ? " (the previous code was used to pair a host)"
                      : " (the previous code had " + std::to_string(c.failures) + " wrong attempts and is retired)")
            << std::endl;
}

std::string Receiver::ready_line() const {
  std::string line = "braid: code " + code() + " listening on";
  std::vector<std::string> advertised;
  {
    std::lock_guard lock(mu_);
    advertised = advertised_;
  }
  for (const auto& a : advertised) line += " " + a;
  for (const auto& p : unix_paths_) line += " unix:" + p;
  return line;
}

void Receiver::wake() {
  uint64_t one = 1;
  if (wake_.valid()) (void)!::write(wake_.get(), &one, sizeof one);
}

void Receiver::stop() {
  stopping_ = true;
  wake();  // sessions end when their peer closes
}

std::thread Receiver::start_thread(std::function<void()> body) {
  if (opts_.start_thread) return opts_.start_thread(std::move(body));
  return std::thread(std::move(body));
}

void Receiver::interrupt(const std::string& reason) {
  std::vector<std::shared_ptr<ReceiverSession>> running;
  {
    std::lock_guard lock(mu_);
    interrupted_ = reason;
    for (auto& r : running_)
      if (r.session && !r.done) running.push_back(r.session);
  }
  for (auto& s : running) s->interrupt(reason);
  stop();
}

std::vector<TransferReport> Receiver::reports() const {
  std::lock_guard lock(mu_);
  std::vector<TransferReport> out(finished_reports_.begin(), finished_reports_.end());
  for (const auto& r : running_)
    if (r.session)
      for (auto& rep : r.session->reports()) out.push_back(rep);
  return out;
}

std::vector<LiveTransfer> Receiver::live() const {
  std::lock_guard lock(mu_);
  std::vector<LiveTransfer> out;
  for (const auto& r : running_)
    if (r.session)
      for (auto& t : r.session->live()) out.push_back(std::move(t));
  return out;
}

uint64_t Receiver::refused_connections() const {
  std::lock_guard lock(mu_);
  return stats_.refused;
}

ConnectionStats Receiver::connection_stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

uint64_t Receiver::rejected_frames() const {
  std::lock_guard lock(mu_);
  uint64_t n = finished_rejected_frames_;
  for (const auto& r : running_)
    if (r.session) n += r.session->rejected_frames();
  return n;
}

std::vector<std::pair<std::string, udp::UdpPortStats>> Receiver::udp_port_stats() const {
  std::vector<std::pair<std::string, udp::UdpPortStats>> out;
  for (const auto& p : udp_ports_.all()) out.emplace_back(p->local_address().str(), p->stats());
  return out;
}

// ---- the accept loop ---------------------------------------------------------------
//
// One thread (run()'s) owns the listeners and every connection that has
// not said what it is: non-blocking, in `pending_`, each with a deadline
// for its first bytes. epoll wakes it for a listener, for a pending
// connection whose first bytes arrived (SO_RCVLOWAT: only once all the
// bytes it waits for are there), for stop() or a session that ended: the
// cost of a wake does not grow with the number of connections waiting
// (poll() would scan all of them for each one that speaks). A ClientHello
// goes to the handshake workers; a lane's first frame goes to its
// session. No thread is ever started for a connection that has not
// authenticated.

namespace {
// epoll data tags: listeners are 0..n-1, the wake eventfd kWakeTag, pending
// connections their id (from kFirstPendingId up, never reused).
constexpr uint64_t kWakeTag = 1ull << 31;
constexpr uint64_t kNetworkTag = kWakeTag + 1;
/// Address changes come in bursts: advertise once the burst is over.
constexpr auto kNetworkSettle = std::chrono::milliseconds(50);
constexpr uint64_t kFirstPendingId = 1ull << 32;
}  // namespace

void Receiver::watch_listeners(bool on) {
  for (size_t i = 0; i < listeners_.size(); ++i) {
    epoll_event ev{};
    ev.events = on ? static_cast<uint32_t>(EPOLLIN) : 0u;
    ev.data.u64 = i;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listeners_[i].get(), &ev);
  }
}

std::vector<std::string> Receiver::addresses_to_advertise() const {
  std::vector<std::string> out;
  for (const auto& got : bound_) {
    if (!got.is_wildcard()) {
      out.push_back(got.str());
      continue;
    }
    for (auto a : lanes::interface_addresses()) {
      if (got.family() == AF_INET && a.family() != AF_INET) continue;
      a.set_port(got.port());
      out.push_back(a.str());
    }
  }
  // What one addresses message holds beside the receiver's protocol.
  if (out.size() > wire::kMaxAddresses - 1) out.resize(wire::kMaxAddresses - 1);
  return out;
}

void Receiver::readvertise() {
  std::vector<std::string> now = addresses_to_advertise();
  std::vector<std::shared_ptr<ReceiverSession>> sessions;
  {
    std::lock_guard lock(mu_);
    if (now == advertised_) return;
    advertised_ = now;
    for (const auto& r : running_)
      if (r.session && !r.done) sessions.push_back(r.session);
  }
  log_.write("addresses", {{"addresses", now}, {"sessions", sessions.size()}});
  for (auto& s : sessions) s->advertise(now);
}

int Receiver::run() {
  for (size_t i = 0; i < opts_.limits.handshake_workers; ++i) {
    try {
      hs_workers_.push_back(start_thread([this] { handshake_worker(); }));
    } catch (const std::system_error& e) {
      log_.write("thread_failed", {{"what", "handshake worker"}, {"reason", e.what()}});
      break;
    }
  }
  if (hs_workers_.empty()) {
    if (!opts_.quiet) std::cerr << "braid: cannot start a handshake thread: no session can be served" << std::endl;
    return kExitFailure;
  }
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) {
    log_.write("accept_loop_failed", {{"reason", std::string("epoll_create1: ") + std::strerror(errno)}});
    if (!opts_.quiet) std::cerr << "braid: epoll_create1: " << std::strerror(errno) << std::endl;
    stop();
  } else {
    for (size_t i = 0; i < listeners_.size(); ++i) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i;
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listeners_[i].get(), &ev);
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeTag;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev);
    if (std::any_of(bound_.begin(), bound_.end(), [](const lanes::Endpoint& b) { return b.is_wildcard(); })) {
      std::string error;
      network_watch_ = lanes::open_network_watch(error);
      if (network_watch_.valid()) {
        ev.data.u64 = kNetworkTag;
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, network_watch_.get(), &ev);
      } else {
        log_.write("network_watch_failed", {{"reason", error}});
      }
    }
  }

  std::vector<epoll_event> events(256);
  bool listening = true;
  while (!stopping_) {
    const auto now = Clock::now();
    // Whatever is past its deadline goes before the wait (ids in accept
    // order, so deadlines in order too; ids already classified are skipped).
    while (!pending_order_.empty()) {
      auto it = pending_.find(pending_order_.front());
      if (it != pending_.end() && it->second.deadline > now) break;
      if (it != pending_.end()) {
        pending_.erase(it);
        std::lock_guard lock(mu_);
        stats_.timed_out++;
      }
      pending_order_.pop_front();
    }
    enforce_handshake_deadlines(now, false);
    if (readvertise_at_ && now >= *readvertise_at_) {
      readvertise_at_.reset();
      readvertise();
    }
    const bool paused = paused_until_ > now;
    if (paused == listening) {
      listening = !paused;
      watch_listeners(listening);
      // After a pause, accept at once: what waits in the backlog is taken
      // now, and an empty backlog ends the episode (accept_ready).
      if (listening)
        for (const auto& l : listeners_) accept_ready(l.get(), now);
    }

    auto until = now + kLoopTick;
    if (!pending_order_.empty())
      if (auto it = pending_.find(pending_order_.front()); it != pending_.end()) until = std::min(until, it->second.deadline);
    if (paused) until = std::min(until, paused_until_);
    if (readvertise_at_) until = std::min(until, *readvertise_at_);
    const int timeout_ms = static_cast<int>(
        std::max<int64_t>(1, std::chrono::ceil<std::chrono::milliseconds>(until - now).count()));
    const int n = ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      log_.write("accept_loop_failed", {{"reason", std::string("epoll_wait: ") + std::strerror(errno)}});
      break;
    }
    const auto after = Clock::now();
    std::vector<size_t> ready_listeners;
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = events[i].data.u64;
      if (tag == kWakeTag) {
        uint64_t v;
        (void)!::read(wake_.get(), &v, sizeof v);
        reap_sessions();
      } else if (tag == kNetworkTag) {
        if (lanes::drain_network_watch(network_watch_.get()) && !readvertise_at_) readvertise_at_ = after + kNetworkSettle;
      } else if (tag < kWakeTag) {
        ready_listeners.push_back(static_cast<size_t>(tag));
      } else if (auto it = pending_.find(tag); it != pending_.end()) {
        if (classify(it->second, events[i].events, after)) pending_.erase(it);
      }
    }
    // After the pending ones: a listener's new connections must not be
    // mistaken for those the events above were about.
    for (size_t i : ready_listeners)
      if (!(paused_until_ > after)) accept_ready(listeners_[i].get(), after);
  }

  // Stopping: nothing new starts; handshakes in progress are cut short.
  pending_.clear();
  pending_order_.clear();
  {
    std::lock_guard lock(mu_);
    handshakes_.clear();
    hs_cv_.notify_all();
  }
  enforce_handshake_deadlines(Clock::now(), true);
  for (auto& t : hs_workers_)
    if (t.joinable()) t.join();
  hs_workers_.clear();
  // Then every running session ends (when its peer closes it).
  for (;;) {
    std::thread t;
    {
      std::lock_guard lock(mu_);
      auto it = std::find_if(running_.begin(), running_.end(), [](const Running& r) { return r.thread.joinable(); });
      if (it == running_.end()) break;
      t = std::move(it->thread);
    }
    t.join();
  }
  std::lock_guard lock(mu_);
  running_.clear();
  return outcome_;
}

void Receiver::accept_ready(int listener, Clock::time_point now) {
  for (int k = 0; k < kMaxAcceptsPerWake; ++k) {
    const int c = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) {
        // The backlog is drained: an episode of failing accepts is over only
        // now, not at the first accept that works again (with the fds still
        // at their limit the next one would fail again, and each would log).
        if (accept_paused_) {
          accept_paused_ = false;
          log_.write("accept_resumed", {{"shed", shed_in_episode_}});
          if (!opts_.quiet)
            std::cerr << "braid: accepting connections again (" << shed_in_episode_ << " dropped meanwhile)"
                      << std::endl;
        }
        return;
      }
      if (is_resource_error(err)) return accept_failed(listener, err, now);
      continue;  // ECONNABORTED, EPROTO, …: that connection is gone; the next one
    }
    {
      std::lock_guard lock(mu_);
      stats_.accepted++;
    }
    // What has spoken (or reset) already is dealt with now: under a flood
    // most connections never wait, nor hold an fd past this call.
    Pending p{security::UniqueFd(c), now + opts_.limits.first_bytes, 1};
    if (classify(p, 0, now)) continue;
    {
      std::lock_guard lock(mu_);
      if (pending_.size() >= max_pending_) stats_.dropped_pending_full++;
    }
    while (pending_.size() >= max_pending_ && !pending_order_.empty()) {
      pending_.erase(pending_order_.front());  // the oldest has had the most time to speak
      pending_order_.pop_front();
    }
    const uint64_t id = next_pending_id_++;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, p.fd.get(), &ev) != 0) {
      if (is_resource_error(errno)) return accept_failed(listener, errno, now);
      continue;
    }
    pending_.emplace(id, std::move(p));  // closing its fd takes it out of the epoll set
    pending_order_.push_back(id);
    // Ids of connections classified since stay in the order until they
    // reach its front: under a flood, sweep them so it stays near pending_'s size.
    if (pending_order_.size() > 2 * max_pending_ + 64)
      std::erase_if(pending_order_, [&](uint64_t i) { return !pending_.count(i); });
  }
}

// EMFILE/ENFILE/ENOBUFS/ENOMEM from accept: the listener stays readable, so
// retrying at once would spin. Logged once per episode; the excess
// connection is closed with the reserve fd (out of fds) so its peer hears a
// close instead of waiting in the backlog; the listeners rest a moment.
// Running sessions are not touched.
void Receiver::accept_failed(int listener, int err, Clock::time_point now) {
  paused_until_ = now + opts_.limits.accept_pause;
  if (!accept_paused_) {
    accept_paused_ = true;
    shed_in_episode_ = 0;
    {
      std::lock_guard lock(mu_);
      stats_.accept_pauses++;
    }
    log_.write("accept_paused", {{"reason", std::strerror(err)}, {"pause_ms", opts_.limits.accept_pause.count()}});
    if (!opts_.quiet)
      std::cerr << "braid: cannot accept connections (" << std::strerror(err)
                << "): new ones are dropped for now, running sessions go on" << std::endl;
  }
  if ((err == EMFILE || err == ENFILE) && reserve_fd_.valid()) {
    reserve_fd_.reset();
    const int c = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (c >= 0) {
      ::close(c);
      ++shed_in_episode_;
      std::lock_guard lock(mu_);
      stats_.shed_no_fd++;
    }
    reserve_fd_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
}

bool Receiver::classify(Pending& p, uint32_t events, Clock::time_point now) {
  uint8_t head[security::kFrameHeaderSize + kMaxJoinPayload + security::kFrameTagSize];
  const ssize_t n = ::recv(p.fd.get(), head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  auto count = [&](uint64_t ConnectionStats::*field) {
    std::lock_guard lock(mu_);
    stats_.*field += 1;
  };
  if (n <= 0) {  // closed or reset before saying anything: a port scan, a flood, a sender that gave up
    count(&ConnectionStats::closed_silent);
    return true;
  }
  // Some bytes, then the end of the stream: what is there is all there will
  // be (and the socket stays readable: waiting for more would spin).
  const bool ended = (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
  if (head[0] == 0x16) {  // a TLS handshake record: a new session
    set_rcvlowat(p.fd.get(), 1);
    std::lock_guard lock(mu_);
    if (handshakes_.size() >= max_queued_handshakes_) {
      stats_.dropped_handshakes_full++;
      return true;
    }
    unwatch(p.fd.get());
    handshakes_.push_back(Handshake{std::move(p.fd), now + opts_.limits.handshake});
    hs_cv_.notify_one();
    return true;
  }
  auto refuse = [&](const std::string& reason, std::optional<uint32_t> lane = std::nullopt) {
    count(&ConnectionStats::refused);
    nlohmann::json f = {{"reason", reason}};
    if (lane) f["lane"] = *lane;
    log_.write("connection_refused", f);
    return true;
  };
  if (n < static_cast<ssize_t>(security::kFrameHeaderSize)) {
    if (ended) return refuse("closed within its first frame header");
    if (p.lowat < static_cast<int>(security::kFrameHeaderSize)) {
      p.lowat = static_cast<int>(security::kFrameHeaderSize);
      set_rcvlowat(p.fd.get(), p.lowat);
    }
    return false;  // wake again when the whole header is there
  }
  security::FrameHeader h;
  if (security::decode_frame_header(std::span<const uint8_t, security::kFrameHeaderSize>(head, sizeof head), h) !=
      security::FrameStatus::ok)
    return refuse("neither a TLS handshake nor a braid lane");
  if (h.length > kMaxJoinPayload) return refuse("a lane whose first frame is not a lane_join", h.lane_id);
  const auto whole = static_cast<ssize_t>(security::sealed_frame_size(h.length));
  if (n < whole) {
    if (ended) return refuse("closed within its first frame", h.lane_id);
    if (p.lowat < whole) {
      p.lowat = static_cast<int>(whole);
      set_rcvlowat(p.fd.get(), p.lowat);
    }
    return false;
  }
  set_rcvlowat(p.fd.get(), 1);
  unwatch(p.fd.get());
  adopt(std::move(p.fd), h);
  return true;
}

// A connection handed on (to a handshake, to a session's lane) leaves the
// accept loop's epoll set: its fd stays open, and a level-triggered EPOLLIN
// on a lane that is receiving data would wake epoll_wait over and over
// (measured: 45 % of the receiver's CPU on a loopback lane, issue 16).
void Receiver::unwatch(int fd) {
  if (epoll_.valid()) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

void Receiver::adopt(security::UniqueFd fd, const security::FrameHeader& h) {
  // LaneLink reads and writes blocking, on the lane's own threads.
  set_blocking(fd.get());
  lanes::tune_lane_socket(fd.get());
  const char* why = nullptr;
  {
    // Under mu_: a session's last reference is its Running entry, so it is
    // always destroyed on its own thread (session_main), never here.
    std::lock_guard lock(mu_);
    auto it = std::find_if(running_.begin(), running_.end(),
                           [&](const Running& r) { return r.session && r.id == h.session_id; });
    if (it == running_.end())
      why = "a lane for no running session (stale or foreign)";
    else if (!it->session->adopt_lane(std::move(fd), h.lane_id))
      why = "lane refused (id already joined, the session is ending, or too many lanes joining)";
    if (why) stats_.refused++;
  }
  if (why) log_.write("connection_refused", {{"reason", why}, {"lane", h.lane_id}});
}

void Receiver::enforce_handshake_deadlines(Clock::time_point now, bool all) {
  std::lock_guard lock(mu_);
  for (auto& [fd, deadline] : in_handshake_)
    if (all || deadline <= now) ::shutdown(fd, SHUT_RDWR);  // establish() fails at once; its worker closes the fd
}

// ---- handshakes --------------------------------------------------------------------

void Receiver::handshake_worker() {
  for (;;) {
    Handshake h;
    {
      std::unique_lock lock(mu_);
      hs_cv_.wait(lock, [&] { return stopping_ || !handshakes_.empty(); });
      if (stopping_) return;
      h = std::move(handshakes_.front());
      handshakes_.pop_front();
      if (h.deadline <= Clock::now()) {
        stats_.timed_out++;
        continue;
      }
      in_handshake_[h.fd.get()] = h.deadline;
    }
    handshake(std::move(h));
  }
}

void Receiver::handshake(Handshake h) {
  const int raw = h.fd.get();
  auto leave = [&] {  // before the fd may close: the accept loop shuts down only fds listed here
    std::lock_guard lock(mu_);
    in_handshake_.erase(raw);
  };
  auto refused = [&](const std::string& why, const std::string& code) {
    leave();
    {
      std::lock_guard lock(mu_);
      stats_.sessions_refused++;
    }
    nlohmann::json f = {{"reason", why}};
    if (!code.empty()) f["code"] = code;
    log_.write("session_refused", f);
    if (!opts_.quiet) std::cerr << "braid: refused a session: " << why << std::endl;
  };
  auto known = host_->known_peers();
  if (!known) return refused(known.error().message, "");
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(h.deadline - Clock::now()).count();
  security::SessionOptions so;
  so.role = security::Role::server;
  so.io_timeout_ms = static_cast<int>(std::max<int64_t>(1, left));
  so.code_keeper = code_.get();
  so.pin_label = opts_.pin_label;
  auto session = security::Session::establish(raw, *host_->tls, *host_->identity, known.value(), so);
  if (!session) {
    ::shutdown(raw, SHUT_RDWR);
    const bool late = Clock::now() >= h.deadline;
    return refused(late ? "the handshake did not finish within " + std::to_string(opts_.limits.handshake.count()) + " ms"
                        : session.error().message,
                   std::string(security::errc_name(session.error().code)));
  }
  leave();
  if (const auto& peer = session.value().peer(); peer.how == security::PeerAuth::paired && !opts_.quiet)
    std::cerr << "braid: paired with '" << peer.name << "' (" << security::short_fingerprint(peer.fingerprint)
              << (peer.host != peer.name ? ", calls itself '" + peer.host + "'" : std::string())
              << "); pinned in known_peers (braid peers)" << std::endl;
  if (!set_blocking(raw)) return refused(std::string("fcntl: ") + std::strerror(errno), "");
  lanes::tune_lane_socket(raw);
  start_session(std::move(h.fd), std::move(session.value()));
}

// ---- sessions ----------------------------------------------------------------------

void Receiver::refuse_session(lanes::LaneLink* link, const std::string& peer, const std::string& why) {
  if (link) {
    (void)link->send_message(wire::ErrorMessage{0, why});  // in place of the addresses the sender waits for
    link->shutdown();
  }
  {
    std::lock_guard lock(mu_);
    stats_.sessions_refused++;
  }
  log_.write("session_refused", {{"peer", peer}, {"reason", why}});
  if (!opts_.quiet) std::cerr << "braid: refused a session with '" << peer << "': " << why << std::endl;
}

void Receiver::start_session(security::UniqueFd fd, security::Session session) {
  const std::string peer = session.peer().name;
  const uint64_t sid = session.session_id();
  std::string error;
  auto link = lanes::LaneLink::create(std::move(fd), sid, 0, session.lane_secret(), security::Role::server, error);
  if (!link) return refuse_session(nullptr, peer, error);
  ReceiverConfig cfg;
  const auto own_dir = peer_root_fds_.find(peer);
  cfg.root_fd = own_dir != peer_root_fds_.end() ? own_dir->second.get() : root_fd_.get();
  cfg.yes = opts_.yes;
  cfg.decide_offer = opts_.decide_offer;
  cfg.decision_timeout = opts_.decision_timeout;
  cfg.paired_now = session.peer().how == security::PeerAuth::paired;
  cfg.quiet = opts_.quiet;
  cfg.udp_ports = &udp_ports_;
  for (const auto& b : bound_) cfg.listen_ports.push_back(b.port());
  cfg.max_lanes = opts_.max_lanes;
  cfg.links = opts_.links;
  cfg.disk_faults = opts_.disk_faults;
  cfg.protocol = opts_.protocol;
  cfg.on_report = opts_.on_report;
  const auto& fp = session.peer().fingerprint.bytes();
  const std::vector<uint8_t> peer_key(fp.begin(), fp.end());
  // The same sender again: an earlier session of it that lost every lane
  // carrying messages ends now (it still holds the transfer's journal).
  std::vector<std::shared_ptr<ReceiverSession>> same_peer;
  {
    std::lock_guard lock(mu_);
    for (const auto& r : running_)
      if (r.session && !r.done && r.session->peer_key() == peer_key) same_peer.push_back(r.session);
  }
  for (auto& s : same_peer) s->peer_returned();
  same_peer.clear();
  std::string refusal;
  {
    std::lock_guard lock(mu_);
    size_t live = 0;
    for (const auto& r : running_) live += !r.done;
    if (stopping_) {
      refusal = "the receiver is stopping";
    } else if (live >= opts_.max_sessions) {
      refusal = "the receiver is serving " + std::to_string(live) + " sessions, its most (--max-sessions " +
                std::to_string(opts_.max_sessions) + "); try again later";
    } else {
      try {
        auto s = std::make_shared<ReceiverSession>(cfg, log_, peer, peer_key, sid, session.lane_secret());
        if (!interrupted_.empty()) s->interrupt(interrupted_);  // began while the receiver was being interrupted
        Running& r = running_.emplace_back();
        r.id = sid;
        r.session = std::move(s);
        r.lane0 = std::move(link);
        try {
          r.thread = start_thread([this, &r] { session_main(r); });
        } catch (const std::system_error&) {
          link = std::move(r.lane0);
          running_.pop_back();  // the session's destructor: its writer thread only, nothing else started
          throw;
        }
      } catch (const std::system_error& e) {
        refusal = std::string("cannot start a thread for it: ") + e.what();
      }
    }
  }
  if (!refusal.empty()) return refuse_session(link.get(), peer, refusal);
  log_.write("status", {{"status", "session"}, {"peer", peer},
                        {"how", session.peer().how == security::PeerAuth::paired ? "paired" : "pinned"}});
  if (!opts_.quiet) std::cerr << "braid: session with '" << peer << "'" << std::endl;
}

void Receiver::session_main(Running& r) {
  std::unique_ptr<lanes::LaneLink> link;
  std::shared_ptr<ReceiverSession> s;
  {
    std::lock_guard lock(mu_);
    link = std::move(r.lane0);
    s = r.session;
  }
  std::vector<std::string> advertised;
  {
    std::lock_guard lock(mu_);
    advertised = advertised_;
  }
  s->run(std::move(link), advertised);
  // Only small values outlive the session: its reports, outcome and counts.
  const auto reports = s->reports();
  const int outcome = s->outcome();
  const uint64_t rejected = s->rejected_frames();
  if (opts_.on_unfinished) {
    std::vector<TransferReport> unfinished;
    for (const auto& rep : reports)
      if (!rep.verified) unfinished.push_back(rep);
    if (!unfinished.empty()) opts_.on_unfinished(unfinished);
  }
  {
    std::lock_guard lock(mu_);
    r.session.reset();  // no lane can reach it now (adopt looks it up under mu_)
    finished_rejected_frames_ += rejected;
    for (const auto& rep : reports) finished_reports_.push_back(rep);
    while (finished_reports_.size() > kMaxKeptReports) finished_reports_.pop_front();
    if (outcome_ == 0) outcome_ = outcome;
  }
  // The last reference: lanes' fds and reader threads, piece buffers, UDP
  // lanes and the writer all go here, on this thread, now.
  s.reset();
  // Chunk-sized piece buffers freed by many threads stay in glibc's arenas
  // otherwise; a receiver left running gives them back after each session.
  ::malloc_trim(0);
  {
    std::lock_guard lock(mu_);
    r.done = true;
  }
  if (opts_.once) stop();
  wake();  // the accept loop joins this thread
}

void Receiver::reap_sessions() {
  std::list<Running> ended;
  {
    std::lock_guard lock(mu_);
    for (auto it = running_.begin(); it != running_.end();) {
      auto next = std::next(it);
      if (it->done) ended.splice(ended.end(), running_, it);
      it = next;
    }
  }
  for (auto& r : ended)
    if (r.thread.joinable()) r.thread.join();
}

}  // namespace braid::transfer
