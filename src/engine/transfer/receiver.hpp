// `braid recv`: listens, prints its pairing code and addresses, and runs
// sessions. A new connection is told apart by its first byte: a TLS
// handshake (0x16) starts a session; a braid frame (version 1) is a further
// lane of a running session, found by the session id in its header — a frame
// naming no running session (e.g. from an older one) is counted and closed
// without touching any session. UDP lanes (negotiated over a session's TCP
// lane) come in on the same port numbers the listeners have.
#pragma once

#include <atomic>
#include <filesystem>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "engine/lanes/endpoint.hpp"
#include "engine/security/pairing_code.h"
#include "engine/security/unique_fd.h"
#include "engine/transfer/event_log.hpp"
#include "engine/transfer/local_host.hpp"
#include "engine/transfer/receiver_session.hpp"
#include "engine/transfer/sender_session.hpp"

namespace braid::transfer {

struct ReceiveOptions {
  std::string dir;
  std::vector<std::string> listen;  // ADDR:PORT; default: every interface, port 7878
  std::optional<std::string> code;  // fixed pairing code (scripts); default: a fresh one
  bool yes = false;
  bool once = false;
  size_t max_lanes = 64;  // lanes open at once per session (ReceiverConfig::max_lanes)
  bool quiet = false;  // in-process tests: no lines on stderr
  files::LinkPolicy links = files::LinkPolicy::safe;  // recv --links
  std::optional<std::filesystem::path> config_dir;
};

class Receiver {
 public:
  static std::variant<std::unique_ptr<Receiver>, Failure> start(const ReceiveOptions& opts, EventLog& log);
  ~Receiver();

  /// "braid: code XXXX-... listening on 127.0.0.1:PORT [::1]:PORT"
  std::string ready_line() const;
  std::string code() const { return code_.display(); }
  const std::vector<lanes::Endpoint>& listening() const { return bound_; }

  /// Accepts and serves sessions until stop() (or, with --once, the end of
  /// the first session). Returns the exit code.
  int run();
  /// From any thread: makes run() return.
  void stop();
  /// From any thread (SIGINT/SIGTERM): every session is interrupted with
  /// `reason` (ReceiverSession::interrupt: the sender is told, the journals
  /// are committed), a session still starting too, and run() returns.
  void interrupt(const std::string& reason);

  std::vector<TransferReport> reports() const;
  /// Connections refused before reaching a session (unknown session id, bad first bytes).
  uint64_t refused_connections() const { return refused_.load(); }
  uint64_t rejected_frames() const;
  /// What reached the shared UDP ports and no lane took (by local address).
  std::vector<std::pair<std::string, udp::UdpPortStats>> udp_port_stats() const;

 private:
  Receiver(EventLog& log, security::PairingCode code) : log_(log), code_(std::move(code)) {}
  void handle_connection(security::UniqueFd fd);
  void run_session(security::UniqueFd fd);

  EventLog& log_;
  ReceiveOptions opts_;
  security::PairingCode code_;
  std::unique_ptr<LocalHost> host_;
  security::UniqueFd root_fd_;
  std::vector<security::UniqueFd> listeners_;
  std::vector<lanes::Endpoint> bound_;
  std::vector<std::string> advertised_;
  /// UDP lanes of every session, on the listeners' port numbers (one shared
  /// socket per local address, opened on a lane's first use of it).
  udp::UdpRecvPorts udp_ports_;
  security::UniqueFd wake_;  // eventfd: stop() pokes it

  mutable std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<ReceiverSession>> sessions_;
  std::vector<std::shared_ptr<ReceiverSession>> finished_;
  std::list<std::thread> workers_;
  std::atomic<bool> stopping_{false};
  std::string interrupted_;  // under mu_: the reason, once interrupt() was called
  std::atomic<uint64_t> refused_{0};
  int outcome_ = 0;
  bool served_one_ = false;
};

}  // namespace braid::transfer
