// `braid recv`: listens, prints its pairing code and addresses, and runs
// sessions. A new connection is told apart by its first byte: a TLS
// handshake (0x16) starts a session; a braid frame (version 1) is a further
// lane of a running session, found by the session id in its header — a frame
// naming no running session (e.g. from an older one) is counted and closed
// without touching any session. UDP lanes (negotiated over a session's TCP
// lane) come in on the same port numbers the listeners have.
//
// Resources (issue 11): no thread is started for a connection that has not
// authenticated, and nothing a connection or a session holds outlives it.
//   - run()'s thread is the accept loop: epoll over the listeners and every
//     connection whose first bytes have not come (non-blocking, at most
//     ReceiveLimits::max_pending, each for at most `first_bytes`);
//   - a ClientHello waits in a bounded queue for one of a few handshake
//     workers; a handshake has `handshake` to finish, or its socket is shut;
//   - an authenticated session gets its control thread (at most
//     --max-sessions at once); its lanes a reader each (at most --max-lanes);
//     when it ends, that thread destroys it — fds, threads, buffers, UDP
//     lanes, the writer — keeps its reports and outcome, and is joined by
//     the accept loop at once;
//   - accept failing for want of fds or memory is logged once per episode,
//     the excess connection is closed (a reserve fd), and the listeners rest
//     `accept_pause`; running sessions go on. A thread that cannot start
//     refuses its session (or lane) with a log line.
// Threads: 1 + handshake_workers + per session (1 control + 1 writer + a
// reader per lane), + one per shared UDP port in use.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/lanes/endpoint.hpp"
#include "engine/lanes/lane_link.hpp"
#include "engine/security/code_keeper.h"
#include "engine/security/frame_format.h"
#include "engine/security/pairing_code.h"
#include "engine/security/unique_fd.h"
#include "engine/transfer/event_log.hpp"
#include "engine/transfer/local_host.hpp"
#include "engine/transfer/receiver_session.hpp"
#include "engine/transfer/sender_session.hpp"

namespace braid::transfer {

/// Starts a thread running `body`. The default is std::thread; in-process
/// tests pass one that throws std::system_error (what std::thread throws
/// when the system has no thread left to give) to see the receiver refuse
/// that one session and go on.
using ThreadStarter = std::function<std::thread(std::function<void()> body)>;

/// How much the receiver gives connections that have not authenticated.
/// Tests shorten the times; `braid recv` keeps these.
struct ReceiveLimits {
  /// A braid sender writes its ClientHello, or a lane's lane_join frame, as
  /// soon as its connect returns; 5 s covers a few SYN and data
  /// retransmissions (1 s RTO) on a lossy path and bounds how long a silent
  /// connection holds an fd.
  std::chrono::milliseconds first_bytes{5000};
  /// From a ClientHello's arrival to an authenticated session, the wait for
  /// a worker included: TLS 1.3 (1 RTT, ~3 KB of certificates) and the peer
  /// check (HELLO, then when pairing SPAKE2's shares and confirmations:
  /// under 3 RTTs) are a few RTTs even over a 600 ms satellite path or a
  /// 1.5 Mbit/s link. Session::establish's
  /// per-read timeout alone would let a peer trickling a byte a second hold
  /// a worker forever: the accept loop shuts the socket down at this deadline.
  std::chrono::milliseconds handshake{10000};
  /// A handshake is ~1 ms of CPU (ECDHE and a signature each way) but a peer
  /// on a slow path holds its worker for several RTTs: four serve hundreds
  /// of sessions a second, and three slow peers still leave one free.
  size_t handshake_workers = 4;
  /// Connections waiting for their first bytes, and ClientHellos waiting for
  /// a worker. Each holds an fd: besides these caps, at most a quarter (an
  /// eighth) of RLIMIT_NOFILE, so a flood of them never takes the fds that
  /// sessions need for their lanes and files. When full, the oldest waiting
  /// connection is dropped (it had the most time to speak); a ClientHello
  /// finding the queue full is dropped.
  size_t max_pending = 1024;
  size_t max_queued_handshakes = 64;
  /// Out of fds or memory, accept is tried again after this long, not in a busy loop.
  std::chrono::milliseconds accept_pause{100};
};

struct ReceiveOptions {
  std::string dir;
  std::vector<std::string> listen;  // ADDR:PORT; default: every interface, port 7878
  std::optional<std::string> code;  // fixed pairing code (scripts); default: a fresh one
  std::string pin_label;            // `--name`: the label to pin a sender that pairs under
  bool yes = false;
  bool once = false;
  size_t max_lanes = 64;  // lanes open at once per session (ReceiverConfig::max_lanes)
  /// Authenticated sessions served at once; one more is refused with the
  /// reason. Each costs a control thread, a writer thread and one reader
  /// per lane (≤ max_lanes), so this bounds the receiver's threads.
  size_t max_sessions = 16;
  bool quiet = false;  // in-process tests: no lines on stderr
  files::LinkPolicy links = files::LinkPolicy::safe;  // recv --links
  std::optional<std::filesystem::path> config_dir;
  ThreadStarter start_thread;  // empty: std::thread
  ReceiveLimits limits;
  /// In-process tests only: what the disk does to each piece's write
  /// (a slow disk, a full one); never set by the command line.
  std::shared_ptr<DiskFaults> disk_faults;
  /// In-process tests only: the braid protocol this receiver says it speaks
  /// (session::ReceiverConfig::protocol), to meet a sender as an older one would.
  uint32_t protocol = wire::kProtocolVersion;
  /// Called with the new live code (display form; "" if none could be made)
  /// when the code is spent or retired, e.g. to announce its number. Runs
  /// on a handshake worker under the code keeper's lock: keep it short.
  std::function<void(const std::string& code)> on_code_change;
  /// Each transfer's report the moment it is verified (ReceiverConfig::on_report).
  std::function<void(const TransferReport&)> on_report;
  /// A session ended: the reports of its transfers that did not verify
  /// (failed, interrupted, incomplete; the verified ones went to on_report).
  /// On the session's thread.
  std::function<void(const std::vector<TransferReport>&)> on_unfinished;
  /// Who decides offers (`braid serve`; ReceiverConfig::decide_offer); empty: `yes` or the terminal.
  OfferDecider decide_offer;
  std::chrono::milliseconds decision_timeout{120000};
  /// A pinned peer's own target directory, by its label (created if
  /// missing); other peers' files go to `dir`.
  std::map<std::string, std::string> peer_dirs;
};

/// What happened to connections that never became a session or a lane
/// (`--json`'s "connections").
struct ConnectionStats {
  uint64_t accepted = 0;
  uint64_t refused = 0;            // bad first bytes, or a lane for no running session
  uint64_t closed_silent = 0;      // closed (or reset) by the peer before any byte
  uint64_t timed_out = 0;          // no first bytes / no finished handshake in time
  uint64_t dropped_pending_full = 0;    // the oldest waiting one, to make room
  uint64_t dropped_handshakes_full = 0; // the handshake queue was full
  uint64_t shed_no_fd = 0;         // accepted and closed at once while out of fds (reserve fd)
  uint64_t accept_pauses = 0;      // episodes of accept failing for want of fds or memory
  uint64_t sessions_refused = 0;   // handshake failed, --max-sessions reached, or no thread
};

class Receiver {
 public:
  static std::variant<std::unique_ptr<Receiver>, Failure> start(const ReceiveOptions& opts, EventLog& log);
  ~Receiver();

  /// "braid: code XXXX-... listening on 127.0.0.1:PORT [::1]:PORT"
  std::string ready_line() const;
  /// The pairing code live now (XXXX-...), "" if none could be made. A code
  /// pairs one new host and is retired after 3 wrong attempts; then a new
  /// one is live and printed (docs/security.md, "One-time codes").
  std::string code() const;
  const std::vector<lanes::Endpoint>& listening() const { return bound_; }

  /// Accepts and serves sessions until stop() (or, with --once, the end of
  /// the first session). Then waits for the running sessions to end (their
  /// peers close them) and returns the exit code.
  int run();
  /// From any thread: makes run() return.
  void stop();
  /// From any thread (SIGINT/SIGTERM): every session is interrupted with
  /// `reason` (ReceiverSession::interrupt: the sender is told, the journals
  /// are committed), a session still starting too, and run() returns.
  void interrupt(const std::string& reason);

  /// The reports of finished sessions (the latest 1000: receiver.cpp, kMaxKeptReports) and of running ones.
  std::vector<TransferReport> reports() const;
  /// The running sessions' accepted transfers, for the live display.
  std::vector<LiveTransfer> live() const;
  /// Connections refused before reaching a session (unknown session id, bad first bytes).
  uint64_t refused_connections() const;
  ConnectionStats connection_stats() const;
  uint64_t rejected_frames() const;
  /// What reached the shared UDP ports and no lane took (by local address).
  std::vector<std::pair<std::string, udp::UdpPortStats>> udp_port_stats() const;

 private:
  using Clock = std::chrono::steady_clock;
  /// A connection whose first bytes have not arrived yet (the accept loop's).
  struct Pending {
    security::UniqueFd fd;
    Clock::time_point deadline;
    int lowat = 1;  // SO_RCVLOWAT now: poll wakes only once this many bytes wait
  };
  /// A TLS ClientHello waiting for (or in) a handshake worker.
  struct Handshake {
    security::UniqueFd fd;
    Clock::time_point deadline;
  };
  /// An authenticated session and its control thread.
  struct Running {
    uint64_t id = 0;
    std::shared_ptr<ReceiverSession> session;
    std::unique_ptr<lanes::LaneLink> lane0;  // until the thread takes it
    std::thread thread;
    bool done = false;  // its thread is about to return: join it
  };

  Receiver(EventLog& log, security::PairingCode code);
  void code_changed(const security::OneTimeCode::Changed& change);
  std::thread start_thread(std::function<void()> body);
  void accept_ready(int listener, Clock::time_point now);
  void accept_failed(int listener, int err, Clock::time_point now);
  /// Looks at a pending connection's first bytes: false while it must wait for more.
  bool classify(Pending& p, uint32_t events, Clock::time_point now);
  void watch_listeners(bool on);
  /// Takes a pending connection out of the accept loop's epoll set before it is handed on.
  void unwatch(int fd);
  void adopt(security::UniqueFd fd, const security::FrameHeader& h);
  void handshake_worker();
  void handshake(Handshake h);
  void start_session(security::UniqueFd fd, security::Session session);
  void refuse_session(lanes::LaneLink* link, const std::string& peer, const std::string& why);
  void session_main(Running& r);
  /// Joins the threads of sessions that ended. Outside mu_.
  void reap_sessions();
  /// Shuts down handshakes past their deadline (all of them with `all`).
  void enforce_handshake_deadlines(Clock::time_point now, bool all);
  void wake();

  EventLog& log_;
  ReceiveOptions opts_;
  std::unique_ptr<security::OneTimeCode> code_;  // handshake workers lease and settle it
  std::unique_ptr<LocalHost> host_;
  security::UniqueFd root_fd_;
  std::map<std::string, security::UniqueFd> peer_root_fds_;  // opts_.peer_dirs, opened at start
  std::vector<security::UniqueFd> listeners_;
  std::vector<lanes::Endpoint> bound_;
  std::vector<std::string> advertised_;  // under mu_: changes with the host's addresses
  /// Listeners on a wildcard address advertise every address of the host:
  /// the accept loop watches the network (rtnetlink) and tells the sessions.
  security::UniqueFd network_watch_;
  std::optional<std::chrono::steady_clock::time_point> readvertise_at_;
  std::vector<std::string> addresses_to_advertise() const;
  void readvertise();
  /// UDP lanes of every session, on the listeners' port numbers (one shared
  /// socket per local address, opened on a lane's first use of it).
  udp::UdpRecvPorts udp_ports_;
  std::vector<std::string> unix_paths_;  // --listen unix:PATH (removed when the receiver ends)
  security::UniqueFd wake_;  // eventfd: stop() and an ending session poke it
  /// Held open so that, out of fds, one can be given back to accept and
  /// close the excess connection (the peer hears a close, not silence).
  security::UniqueFd reserve_fd_;
  size_t max_pending_ = 0, max_queued_handshakes_ = 0;  // from RLIMIT_NOFILE (receiver.cpp)

  // The accept loop's own (run()'s thread).
  security::UniqueFd epoll_;
  std::unordered_map<uint64_t, Pending> pending_;  // by id (the epoll tag)
  std::deque<uint64_t> pending_order_;             // ids in accept order (some already gone)
  uint64_t next_pending_id_ = 1ull << 32;  // receiver.cpp: kFirstPendingId
  Clock::time_point paused_until_{};
  bool accept_paused_ = false;  // in an episode of EMFILE/ENFILE/ENOBUFS/ENOMEM
  uint64_t shed_in_episode_ = 0;

  mutable std::mutex mu_;
  std::condition_variable hs_cv_;
  std::deque<Handshake> handshakes_;            // waiting for a worker
  std::map<int, Clock::time_point> in_handshake_;  // fd -> deadline; the worker closes it only after erasing it
  std::vector<std::thread> hs_workers_;
  std::list<Running> running_;
  std::deque<TransferReport> finished_reports_;
  uint64_t finished_rejected_frames_ = 0;
  ConnectionStats stats_;
  std::atomic<bool> stopping_{false};
  std::string interrupted_;  // under mu_: the reason, once interrupt() was called
  int outcome_ = 0;
};

}  // namespace braid::transfer
