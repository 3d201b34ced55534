#include "engine/transfer/receiver.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "engine/lanes/lane_link.hpp"
#include "engine/lanes/tcp.hpp"
#include "engine/files/receive_tree.hpp"
#include "engine/security/frame_format.h"
#include "engine/transfer/code_text.hpp"
#include "engine/transfer/exit_codes.hpp"

namespace braid::transfer {

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

  std::vector<std::string> wanted = opts.listen;
  bool defaulted = wanted.empty();
  if (defaulted) wanted = {"[::]:" + std::to_string(kDefaultPort)};
  for (const auto& w : wanted) {
    auto ep = lanes::parse_numeric_endpoint(w, kDefaultPort);
    if (!ep) return Failure{kExitUsage, "bad --listen '" + w + "' (ADDR:PORT, e.g. 127.0.0.1:7878 or [::1]:0)"};
    auto fd = lanes::listen_tcp(*ep, error);
    if (!fd.valid() && defaulted) {  // no IPv6 on this host: IPv4 only
      ep = lanes::parse_numeric_endpoint("0.0.0.0:" + std::to_string(kDefaultPort), kDefaultPort);
      fd = lanes::listen_tcp(*ep, error);
    }
    if (!fd.valid()) return Failure{kExitFailure, error};
    lanes::Endpoint got = lanes::local_endpoint_of(fd.get());
    r->bound_.push_back(got);
    if (got.is_wildcard()) {
      for (auto a : lanes::interface_addresses()) {
        if (got.family() == AF_INET && a.family() != AF_INET) continue;
        a.set_port(got.port());
        r->advertised_.push_back(a.str());
      }
    } else {
      r->advertised_.push_back(got.str());
    }
    r->listeners_.push_back(std::move(fd));
  }
  r->wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  log.write("status", {{"status", "listening"}, {"addresses", r->advertised_}});
  return r;
}

Receiver::~Receiver() {
  stop();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
}

std::string Receiver::ready_line() const {
  std::string line = "braid: code " + code_.display() + " listening on";
  for (const auto& a : advertised_) line += " " + a;
  return line;
}

void Receiver::stop() {
  stopping_ = true;
  uint64_t one = 1;
  if (wake_.valid()) (void)!::write(wake_.get(), &one, sizeof one);
  std::lock_guard lock(mu_);
  for (auto& [id, s] : sessions_) (void)s;  // sessions end when their peer closes
}

void Receiver::interrupt(const std::string& reason) {
  std::vector<std::shared_ptr<ReceiverSession>> running;
  {
    std::lock_guard lock(mu_);
    interrupted_ = reason;
    for (auto& [id, s] : sessions_) running.push_back(s);
  }
  for (auto& s : running) s->interrupt(reason);
  stop();
}

std::vector<TransferReport> Receiver::reports() const {
  std::lock_guard lock(mu_);
  std::vector<TransferReport> out;
  for (const auto& s : finished_)
    for (auto& r : s->reports()) out.push_back(r);
  for (const auto& [id, s] : sessions_)
    for (auto& r : s->reports()) out.push_back(r);
  return out;
}

uint64_t Receiver::rejected_frames() const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  for (const auto& s : finished_) n += s->rejected_frames();
  for (const auto& [id, s] : sessions_) n += s->rejected_frames();
  return n;
}

std::vector<std::pair<std::string, udp::UdpPortStats>> Receiver::udp_port_stats() const {
  std::vector<std::pair<std::string, udp::UdpPortStats>> out;
  for (const auto& p : udp_ports_.all()) out.emplace_back(p->local_address().str(), p->stats());
  return out;
}

int Receiver::run() {
  std::vector<pollfd> fds;
  for (const auto& l : listeners_) fds.push_back({l.get(), POLLIN, 0});
  fds.push_back({wake_.get(), POLLIN, 0});
  while (!stopping_) {
    int rc = ::poll(fds.data(), fds.size(), 500);
    if (rc < 0 && errno != EINTR) break;
    for (size_t i = 0; i + 1 < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      int c = ::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      lanes::tune_lane_socket(c);
      std::lock_guard lock(mu_);
      workers_.emplace_back([this, c] { handle_connection(security::UniqueFd(c)); });
    }
  }
  // Wait for every connection handler (and so every session) to end.
  for (;;) {
    std::thread t;
    {
      std::lock_guard lock(mu_);
      if (workers_.empty()) break;
      t = std::move(workers_.front());
      workers_.pop_front();
    }
    if (t.joinable()) t.join();
  }
  std::lock_guard lock(mu_);
  return outcome_;
}

void Receiver::handle_connection(security::UniqueFd fd) {
  // The first bytes decide what this connection is; a silent one is dropped.
  timeval tv{10, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  uint8_t head[security::kFrameHeaderSize];
  ssize_t n = ::recv(fd.get(), head, 1, MSG_PEEK);
  if (n != 1) return;
  if (head[0] == 0x16) {  // a TLS handshake record: a new session
    timeval none{0, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    return run_session(std::move(fd));
  }
  n = ::recv(fd.get(), head, sizeof head, MSG_PEEK | MSG_WAITALL);
  security::FrameHeader h;
  if (n != static_cast<ssize_t>(sizeof head) ||
      security::decode_frame_header(std::span<const uint8_t, security::kFrameHeaderSize>(head, sizeof head), h) !=
          security::FrameStatus::ok) {
    refused_++;
    log_.write("connection_refused", {{"reason", "neither a TLS handshake nor a braid lane"}});
    return;
  }
  timeval none{0, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  std::shared_ptr<ReceiverSession> s;
  {
    std::lock_guard lock(mu_);
    if (auto it = sessions_.find(h.session_id); it != sessions_.end()) s = it->second;
  }
  if (!s || !s->adopt_lane(std::move(fd), h.lane_id)) {
    refused_++;
    log_.write("connection_refused",
               {{"reason", s ? "lane id already joined" : "a lane for no running session (stale or foreign)"},
                {"lane", h.lane_id}});
  }
}

void Receiver::run_session(security::UniqueFd fd) {
  auto known = host_->known_peers();
  if (!known) {
    log_.write("session_refused", {{"reason", known.error().message}});
    return;
  }
  security::SessionOptions so{security::Role::server, &code_, 30'000};
  auto session = security::Session::establish(fd.get(), *host_->tls, *host_->identity, known.value(), so);
  if (!session) {
    ::shutdown(fd.get(), SHUT_RDWR);
    log_.write("session_refused", {{"reason", session.error().message},
                                   {"code", std::string(security::errc_name(session.error().code))}});
    if (!opts_.quiet) std::cerr << "braid: refused a session: " << session.error().message << std::endl;
    return;
  }
  const std::string peer = session.value().peer().name;
  const uint64_t sid = session.value().session_id();
  std::string error;
  auto link = lanes::LaneLink::create(std::move(fd), sid, 0, session.value().lane_secret(), security::Role::server, error);
  if (!link) return;
  ReceiverConfig cfg{root_fd_.get(), opts_.yes, opts_.quiet, &udp_ports_, {}};
  for (const auto& b : bound_) cfg.listen_ports.push_back(b.port());
  cfg.max_lanes = opts_.max_lanes;
  cfg.links = opts_.links;
  const auto& fp = session.value().peer().fingerprint.bytes();
  auto s = std::make_shared<ReceiverSession>(cfg, log_, peer, std::vector<uint8_t>(fp.begin(), fp.end()), sid,
                                             session.value().lane_secret());
  std::string interrupted;
  {
    std::lock_guard lock(mu_);
    sessions_[sid] = s;
    interrupted = interrupted_;
  }
  if (!interrupted.empty()) s->interrupt(interrupted);  // began while the receiver was being interrupted
  log_.write("status", {{"status", "session"}, {"peer", peer},
                        {"how", session.value().peer().how == security::PeerAuth::paired ? "paired" : "pinned"}});
  if (!opts_.quiet) std::cerr << "braid: session with '" << peer << "'" << std::endl;
  s->run(std::move(link), advertised_);
  {
    std::lock_guard lock(mu_);
    sessions_.erase(sid);
    finished_.push_back(s);
    if (outcome_ == 0) outcome_ = s->outcome();
    served_one_ = true;
  }
  if (opts_.once) stop();
}

}  // namespace braid::transfer
