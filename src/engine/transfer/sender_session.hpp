// The sending side of a braid session: the lanes to one receiver and the
// transfers sent over them, one after another.
//
// Threads (docs/engine.md):
//   - the caller's thread runs a transfer: it sends the offer, then sleeps on
//     the session's condition variable until the scheduler's next timeout,
//     an ack, a lane change or the end, feeding on_timeout and drawing progress;
//   - per lane a writer thread: takes the lane's next Assign, reads the piece
//     once with pread (hashing as it reads), seals each 256 KiB frame in place
//     and writes it; it reports on_send_started / on_written;
//   - per TCP lane still connecting a connector thread: when the lane opens,
//     it joins the session and, if one runs, the transfer (attach_lane_locked);
//   - per lane a reader thread: opens frames, feeds acks to the scheduler,
//     hands control messages to the caller's thread;
//   - with `--background`, one pacing thread: every kTcpPacingEvery it reads
//     each TCP data lane's TCP_INFO, feeds the lane's TcpPacingCap and sets
//     SO_MAX_PACING_RATE from its answer.
// One mutex guards the scheduler and every lane's queue: the core decides
// what goes where (Assign/Cancel), the threads only carry it out.
#pragma once

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "core/scheduler.hpp"
#include "engine/files/fd_cache.hpp"
#include "engine/files/file_layout.hpp"
#include "engine/files/source_tree.hpp"
#include "engine/lanes/endpoint.hpp"
#include "engine/lanes/lane_link.hpp"
#include "engine/transfer/event_log.hpp"
#include "engine/transfer/local_host.hpp"
#include "engine/transfer/report.hpp"
#include "engine/udp/udp_lane_types.hpp"
#include "engine/wire/messages.hpp"

namespace braid::transfer {

constexpr uint16_t kDefaultPort = 7878;
/// Payload bytes of file data per frame: large, so per-frame costs (a syscall,
/// a GCM setup, a header) vanish next to the per-byte work.
constexpr size_t kFrameData = 256 * 1024;
/// How often `--log` records every lane's state (event "sample").
constexpr Duration kSampleEvery = Duration::millis(100);
/// How often a `--background` session reads each TCP lane's TCP_INFO and
/// updates its pacing cap (transport/tcp_pacing_cap.hpp): a few times per
/// RTT on most paths, ~100 getsockopt calls per second per lane.
constexpr std::chrono::milliseconds kTcpPacingEvery{10};
/// How long connect() waits for further TCP lanes before the first transfer
/// may start: long enough for a connect and a join over most paths (two
/// round trips), short next to the 3 s a dead path takes to fail. A lane
/// that opens later joins the running transfer.
constexpr std::chrono::milliseconds kLaneGrace{200};

/// What kind of lanes discovered paths (and `--lane` specs without a
/// `tcp:`/`udp:` prefix) get. `automatic`: see docs/engine.md ("auto").
enum class Transport { tcp, udp, automatic };

struct ConnectOptions {
  std::string remote;                 // HOST[:PORT]
  std::optional<std::string> code;    // the receiver's pairing code
  int streams = 2;                    // lanes per path
  std::vector<std::string> lanes;     // [tcp:|udp:]LOCAL=REMOTE:PORT, by hand
  Transport transport = Transport::tcp;
  std::string cc = "delay";           // UDP lanes' congestion controller (--cc, --background);
                                      // "background" also caps TCP lanes' pacing rate (tcp_pacing_cap.hpp)
  std::string tcp_cc;                 // TCP lanes' kernel controller (TCP_CONGESTION); empty: the kernel's default
  size_t packet_size = udp::kDefaultPacketSize;
  /// Caps the whole transfer: split evenly over the data lanes planned at
  /// connect time (UDP: the lane's pacer; TCP: SO_MAX_PACING_RATE).
  std::optional<Rate> rate_limit;
  size_t max_lanes = 16;
  std::optional<std::filesystem::path> config_dir;  // default: $XDG_CONFIG_HOME/braid
  int connect_timeout_ms = 10'000;
};

struct TransferOptions {
  std::string policy = "braid";
  wire::HashAlgo hash = wire::HashAlgo::xxh3_128;
  uint64_t chunk_size = 1 << 20;
  bool progress = false;  // draw a progress line on stderr
};

struct Failure {
  int exit_code = 1;
  std::string message;
};

struct TransferOutcome {
  int exit_code = 0;
  std::string message;
  TransferReport report;
};

/// The receiver's answer to an offer (for tests that offer by hand).
struct OfferAnswer {
  bool accepted = false;
  wire::RefuseReason reason = wire::RefuseReason::declined;
  std::string message;
  std::vector<wire::HeldRange> held;  // accepted: what the receiver has from an earlier run
};

class SenderSession {
 public:
  static std::variant<std::unique_ptr<SenderSession>, Failure> connect(const ConnectOptions& opts, EventLog& log);
  ~SenderSession();

  /// Sends every entry of `tree` as one transfer; blocks until it ends.
  TransferOutcome send(const files::SourceTree& tree, const TransferOptions& opts);
  /// Offers `offer` as given and returns the answer; sends no data (an
  /// accepted offer is then abandoned). For tests of the receiver's checks.
  OfferAnswer offer_only(wire::Offer offer);
  /// Says bye and closes every lane.
  void close();
  /// From any thread (SIGINT/SIGTERM): tells the receiver `reason` (an error
  /// message: it commits what it verified and says so) and fails the running
  /// transfer with it, so send() returns; between transfers the lanes are
  /// shut, so whatever waits on them returns too. close() still follows.
  void interrupt(const std::string& reason);

  size_t live_lanes() const;
  std::string peer_name() const { return peer_name_; }

 private:
  struct Lane;
  struct Active;
  class UdpEvents;
  struct LanePath;

  SenderSession(EventLog& log);
  Time now() const;
  void add_lane(std::unique_ptr<lanes::LaneLink> link, const std::string& local, const std::string& remote);
  void open_extra_lanes(const ConnectOptions& opts, const lanes::Endpoint& first_local,
                        const lanes::Endpoint& first_remote, const std::vector<std::string>& advertised, bool udp_default);
  /// Connects a TCP lane and adds it (on a connector thread, see open_extra_lanes).
  void open_tcp_lane(const LanePath& p, uint32_t lane_id, int timeout_ms, std::optional<Rate> per_lane);
  void reader_loop(Lane& lane);
  void writer_loop(Lane& lane);
  /// `--background` on TCP lanes: the pacing thread (see the top of this file).
  void tcp_pacing_loop();
  void pace_tcp_lane(Lane& lane);
  bool take_next_locked(Lane& lane, std::unique_lock<std::mutex>& lock, core::Assign& a);
  // UDP lanes (sender_session.cpp, "UDP lanes").
  void open_udp_lane(const ConnectOptions& opts, const LanePath& p, uint32_t lane_id, std::optional<Rate> per_lane);
  /// A UDP lane that closed without ever hearing its peer: a TCP lane on its path instead.
  void fall_back_to_tcp(Lane& lane);
  void start_tcp_connector_locked(const LanePath& p, uint32_t lane_id, std::optional<Rate> per_lane);
  void udp_feeder_loop(Lane& lane);
  bool read_range(Active& t, uint64_t off, uint64_t n, uint8_t* dst, std::string& error);
  void on_udp_started(Lane& lane, uint64_t piece);
  void on_udp_acked(Lane& lane, uint64_t piece);
  void report_transport_locked(Lane& lane);
  void on_transfer_ack(Lane& lane, const wire::Ack& ack);
  enum class PieceEnd { sent, cancelled, lane_failed, read_failed };
  PieceEnd send_piece(Lane& lane, const core::Assign& a, Active& t, std::vector<uint8_t>& buf, std::string& error);
  void close_lane(Lane& lane, const std::string& reason, bool announce);
  void drain_locked();
  void attach_lane_locked(Lane& lane);
  Lane* control_lane_locked();
  template <class M>
  bool send_control(const M& m);
  /// Over the active transfer's ordered lane (UDP piece headers, then done).
  template <class M>
  bool send_ordered(const M& m);
  std::optional<OfferAnswer> wait_answer(uint32_t transfer_id);
  /// Resume: checks the receiver's held ranges against the source and marks
  /// the matching ones delivered before the first Assign (resume_check.hpp).
  void resume_held(Active& t, const std::vector<wire::HeldRange>& held);
  void crash_if_asked_locked();
  void log_progress_locked();
  void log_sample_locked();
  void draw_progress_locked(bool final);
  TransferReport build_report_locked(const files::SourceTree& tree);
  void fail_transfer_locked(int code, const std::string& message);

  EventLog& log_;
  std::unique_ptr<LocalHost> host_;
  std::string peer_name_;
  uint64_t session_id_ = 0;
  std::string tcp_cc_;
  bool tcp_background_ = false;        // cap TCP lanes' pacing rate (--background)
  std::optional<Rate> tcp_rate_limit_; // --rate-limit's share per TCP lane, an upper bound for any cap
  std::thread tcp_pacer_;
  std::condition_variable pacer_cv_;   // wakes the pacing thread when the session closes
  security::LaneSecret secret_;
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::unique_ptr<Active> active_;
  std::map<uint32_t, OfferAnswer> answers_;
  std::map<uint32_t, wire::TransferResult> results_;
  std::optional<wire::ErrorMessage> peer_error_;
  std::map<uint32_t, wire::UdpReady> udp_ready_;  // answers to udp_open, by lane id
  uint32_t next_transfer_id_ = 1;
  uint32_t next_lane_id_ = 1;    // for lanes opened after connect (a UDP lane's TCP fall-back)
  int lane_timeout_ms_ = 3000;
  bool closing_ = false;
  std::vector<std::thread> connectors_;  // TCP lanes still connecting (joined by close)
  size_t connecting_ = 0;                // of them, not done yet
};

}  // namespace braid::transfer
