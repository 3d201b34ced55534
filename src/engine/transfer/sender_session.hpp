// The sending side of a braid session in the engine: wiring between the
// pure session machine (core/session/sender.hpp, every protocol decision)
// and the I/O — the TLS bootstrap, path discovery, connecting lanes, the
// lanes themselves (data_lane.hpp: TCP, byte-stream and UDP lanes behind one
// interface), reading the source, the clock, the log and the reports.
//
// Threads: the caller's thread runs a transfer (send(): the offer, timers,
// progress, the resume check); each lane has its own threads (data_lane.hpp);
// a lane still connecting has a connector thread; one pacing thread caps the
// TCP lanes' pacing rates. Every event from any of them goes into the machine under
// one mutex, and the machine's actions are carried out there — none of them
// blocks (lanes queue their work). Lanes are destroyed outside the mutex.
#pragma once

#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <atomic>
#include <string>
#include <functional>
#include <thread>
#include <variant>
#include <vector>

#include "core/transport/tcp_group_cap.hpp"
#include "core/paths/probe.hpp"
#include "core/session/sender.hpp"
#include "engine/files/source_tree.hpp"
#include "engine/lanes/endpoint.hpp"
#include "engine/lanes/lane_link.hpp"
#include "engine/transfer/data_lane.hpp"
#include "engine/transfer/event_log.hpp"
#include "engine/transfer/lane_paths.hpp"
#include "engine/transfer/live_display.hpp"
#include "engine/transfer/local_host.hpp"
#include "engine/transfer/path_memory.hpp"
#include "engine/transfer/piece_buffers.hpp"
#include "engine/transfer/report.hpp"
#include "engine/udp/udp_lane_types.hpp"
#include "core/wire/messages.hpp"

namespace braid::transfer {

struct SenderActive;

constexpr uint16_t kDefaultPort = 7878;
/// Most lanes per path when streams follow what helps (no --streams given).
constexpr size_t kMaxStreamsPerPath = 8;
/// How often `--log` records every lane's state (event "sample").
constexpr Duration kSampleEvery = Duration::millis(100);
/// How often a session reads each TCP lane's TCP_INFO and updates its pacing
/// cap (transport/tcp_group_cap.hpp): a few times per RTT on most paths,
/// ~100 getsockopt calls per second per lane.
constexpr Duration kTcpPacingEvery = Duration::millis(10);
/// The queueing delay a --background transfer's TCP lanes aim for together
/// (a scavenger: TcpGroupCapConfig::yields). Below the default's 5 ms: a
/// background transfer is the one that must not be felt (issue 15: ≤ 5 ms
/// added at the median, ≤ 15 at the 95th percentile, on a slow uplink).
constexpr Duration kBackgroundTarget = Duration::millis(3);
/// Entries per batch of a streamed walk (send_walking): about a third of an
/// offer part (wire::kOfferPartBytes, ~10,000 entries of ~100 bytes), so a
/// part leaves soon after it is full, and the session's lock is taken
/// rarely (25 times for 100,000 files).
constexpr size_t kWalkBatch = 4096;
/// Entries a streamed walk holds past the first one the transfer still
/// needs (session::Sender::walk_should_wait): ~6 offer parts, 256 MiB of
/// 4 KiB files ahead of the acks. With the entries let go lazily
/// (files::SourceTree::release_before), the sender holds at most ~2 windows
/// of entries however large the tree (issue 18).
constexpr size_t kWalkWindow = 65536;

/// What kind of lanes discovered paths (and `--lane` specs without a
/// `tcp:`/`udp:` prefix) get. `automatic`: see docs/engine.md ("auto").
enum class Transport { tcp, udp, automatic };

struct TransferOptions;

struct ConnectOptions {
  std::string remote;                 // HOST[:PORT]
  std::optional<std::string> code;    // the receiver's pairing code
  /// The known-peers label the user named the receiver by, if any: a peer
  /// presenting another key than that label's is refused loudly
  /// (security::SessionOptions::addressed_label).
  std::string peer_label;
  /// `--name`: the label to pin the receiver under if this run pairs it.
  std::string pin_label;
  int streams = 2;                    // lanes per path
  /// Streams per path follow what helps (SenderConfig::max_streams) unless
  /// the user fixed --streams.
  bool grow_streams = false;
  std::vector<std::string> lanes;     // [tcp:|udp:]LOCAL=REMOTE:PORT, by hand
  std::vector<std::string> backup;    // interfaces whose paths carry data only when no other does
  std::vector<std::string> avoid;     // interfaces not used while any other reaches the receiver
  Transport transport = Transport::tcp;
  std::string cc = "delay";           // UDP lanes' congestion controller (--cc, --background);
                                      // "background" also makes TCP lanes' coupled cap a scavenger
  std::string tcp_cc;                 // TCP lanes' kernel controller (TCP_CONGESTION); empty: the kernel's default
  /// The queueing delay TCP lanes on one bottleneck aim for together
  /// (transport::TcpGroupCap; --latency-target); zero: no cap, each lane's
  /// kernel controller runs free. Not under --background (a scavenger's
  /// target, kBackgroundTarget), nor for lanes a --rate-limit / --metered
  /// split holds (both would follow the same measured rates and talk each
  /// other down).
  Duration latency_target = Duration::millis(5);
  size_t packet_size = udp::kDefaultPacketSize;
  /// Caps the whole transfer: shared over the live data lanes by what each delivers.
  std::optional<Rate> rate_limit;
  /// --metered IFACE=RATE: the lanes leaving through IFACE share RATE.
  std::map<std::string, Rate> metered;
  size_t max_lanes = 16;
  std::optional<std::filesystem::path> config_dir;  // default: $XDG_CONFIG_HOME/braid
  int connect_timeout_ms = 10'000;
  /// `braid send`: the transfer to offer as soon as TLS allows. When the
  /// receiver's key is pinned here and no code is given, its offer goes in
  /// TLS's last flight, right behind our HELLO
  /// (security::SessionOptions::early_frames): answered a round trip
  /// sooner. send() with the same tree and options then runs it (else it
  /// is offered there, as without). Both outlive the session; null: none.
  const files::SourceTree* first_tree = nullptr;
  const TransferOptions* first_options = nullptr;
  /// In-process tests only (never set by the command line): faults the
  /// lanes carry — what passes through every TCP or stream lane's frames,
  /// what a UDP lane's datagrams suffer (udp::FaultInjection: loss), and
  /// UDP lanes that die after so many bytes of pieces (by lane id).
  struct Faults {
    std::shared_ptr<lanes::FrameFaults> frames;
    udp::FaultInjection udp;
    std::map<uint32_t, uint64_t> udp_kill_after;
  } faults;
};

/// What the source's disk does to a streamed walk, in process (tests only;
/// never set by the command line): a walk slower than the network.
class WalkFaults {
 public:
  virtual ~WalkFaults() = default;
  /// On the walker's thread, before a batch joins the offer: `walked`
  /// entries joined before it; `last`: it ends the walk.
  virtual void before_batch(size_t walked, bool last) = 0;
};
class ReadFaults;  // source_reader.hpp: what the source's disk does to the lanes' reads

struct TransferOptions {
  std::string policy = "braid";
  wire::HashAlgo hash = wire::HashAlgo::xxh3_128;
  uint64_t chunk_size = 1 << 20;
  /// How files that exist on the receiver are met (--sync and its flags).
  wire::SyncOptions sync;
  /// Frames of TCP and stream lanes cross zstd-compressed where that pays
  /// (engine/compress/frame_codec.hpp): `--compress auto|always|off`.
  compress::Mode compress = compress::Mode::automatic;
  /// The live display (the caller's, outliving send()); null: none.
  LiveDisplay* display = nullptr;
  /// No transfer follows on this session (`braid send`): the goodbye goes
  /// with done, the receiver closes its lanes right behind its verdict and
  /// close() returns at once (session::TransferSpec::last).
  bool last = false;
  /// A streamed walk (send_walking) asks a receiver of protocol 9 to answer
  /// its offer part by part, so pieces flow before the walk ends
  /// (session::TransferSpec::early_pieces). Off: answered whole, as protocol 8.
  bool early_pieces = true;
  /// A streamed walk answered part by part holds at most this many entries
  /// past the first one the transfer still needs (kWalkWindow; tests make
  /// it small to see entries let go on a small tree).
  size_t walk_window = kWalkWindow;
  /// In-process tests only (never set by the command line): what the
  /// source's disk does to a streamed walk.
  std::shared_ptr<WalkFaults> walk_faults;
  /// In-process tests only (never set by the command line): what the
  /// source's disk does to the lanes' reads (a read held while the transfer ends).
  std::shared_ptr<ReadFaults> read_faults;
};

/// One path as `braid probe` measures it: the lanes that leave through one
/// interface towards one address of the receiver.
struct ProbePath {
  std::string name;       // "eth1 -> 10.0.0.2"
  std::string interface;  // "?" when unknown
  std::string remote;     // the receiver's address (no port)
  std::vector<session::PathSpec> specs;  // its lanes' paths, for TransferSpec::only_paths
  size_t lanes = 0;
  /// The least of its lanes' handshake RTTs: the path's round trip with no queue.
  std::optional<double> idle_rtt_ms;
};

/// A probe phase's samples (kSampleEvery apart), or why it could not run.
struct ProbePhaseResult {
  std::vector<paths::ProbeTick> ticks;
  std::string error;
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

class SenderSession : private DataLaneEvents {
 public:
  static std::variant<std::unique_ptr<SenderSession>, Failure> connect(const ConnectOptions& opts, EventLog& log);
  ~SenderSession() override;

  /// Sends every entry of `tree` as one transfer; blocks until it ends.
  /// Neither this nor send_walking() returns, whatever the outcome, while a
  /// lane is inside a read of `tree`, and no lane reads it afterwards
  /// (SourceReader::retire): the caller may free it at once.
  TransferOutcome send(const files::SourceTree& tree, const TransferOptions& opts);
  /// Walks `paths` on a thread of its own while the transfer runs: each
  /// part of the offer goes as soon as the walk has filled it, not after the
  /// whole tree was read (session::TransferSpec::streamed). `tree` (empty,
  /// the caller's) receives the walk; `walk` what it skipped, or the error
  /// that stopped it (then the transfer is cancelled and that is the outcome).
  TransferOutcome send_walking(const std::vector<std::string>& paths, const files::ScanOptions& scan,
                               files::SourceTree& tree, files::ScanResult& walk, const TransferOptions& opts);
  /// Offers `offer` as given and returns the answer; sends no data (an
  /// accepted offer is then abandoned). For tests of the receiver's checks.
  OfferAnswer offer_only(wire::Offer offer);
  /// `braid probe`: the TCP paths whose lanes are open now.
  std::vector<ProbePath> probe_paths() const;
  /// Sends a discard transfer over the lanes of paths `use` (indices into
  /// `all`) for `length` from its first piece, sampling every path's kernel
  /// counters, then cancels it; the session and its lanes stay.
  ProbePhaseResult probe_phase(const std::vector<ProbePath>& all, const std::vector<size_t>& use, Duration length);
  /// Says bye and closes every lane.
  void close();
  /// From any thread (SIGINT/SIGTERM): tells the receiver `reason` (an error
  /// message: it commits what it verified and says so) and fails the running
  /// transfer with it, so send() returns; between transfers the lanes are
  /// shut, so whatever waits on them returns too. close() still follows.
  void interrupt(const std::string& reason);

  size_t live_lanes() const;
  /// Waits until no lane is still connecting or joining, at most `max`.
  /// send() does not (lanes join the running transfer); a probe, which
  /// measures every path, does.
  void wait_for_lanes(std::chrono::milliseconds max);
  std::string peer_name() const { return peer_name_; }
  /// Who the receiver is: its label, claimed name, key, and whether this run paired it.
  const security::PeerInfo& peer() const { return peer_; }

 private:
  friend struct SenderActive;
  using Active = SenderActive;

  explicit SenderSession(EventLog& log, const ConnectOptions& opts);
  Time now() const;
  /// Carries out the machine's actions (under mu_; nothing here blocks).
  /// Wakes the threads waiting on cv_ only when something they wait for may
  /// have changed (see drain_locked's comment).
  void drain_locked();
  /// Before a loop sleeps on cv_ until `wake`: drain_locked then wakes it
  /// early only for a timer due before that.
  void plan_wake_locked(std::chrono::steady_clock::time_point wake) { planned_wake_ = wake; }
  void act(session::SendMessage& a);
  void act(session::OpenLane& a);
  void act(session::CloseLane& a);
  void act(session::SendPiece& a);
  void act(session::ReleasePiece& a);
  void act(session::CancelPiece& a);
  void act(session::SetLaneRate& a);
  void act(session::CheckHeld& a);
  void act(session::TransferEnded& a);
  void act(session::Note& a);
  void connect_lane(session::LaneNo id, session::PathSpec path);
  void start_udp_lane(session::LaneNo id, const session::PathSpec& path, const std::string& address);
  /// Lanes closed since the last call, destroyed here (outside mu_: their
  /// threads' last events take it).
  void bury_closed_lanes();
  void tcp_pacing_loop();
  void log_progress_locked();
  void log_sample_locked();
  void report_transport_progress_locked();
  void draw_progress_locked(bool final);
  TransferReport build_report_locked(const files::SourceTree& tree);
  TransferOutcome outcome_locked(const files::SourceTree& tree, const TransferOptions& opts);
  /// send() and send_walking(): with `walk`, it runs on its own thread once
  /// the (streamed) transfer has started.
  /// `ordered`: the walk hands its entries over in path order with no hard
  /// link (files::walks_in_path_order; session::TransferSpec::ordered).
  TransferOutcome run_transfer(const files::SourceTree& tree, const TransferOptions& opts,
                               const std::function<void()>& walk, bool ordered = false);
  /// Offers `tree` (start_transfer; `streamed`: its walk goes on, and parts
  /// follow) and sets up active_; a failure if the machine would not. Its
  /// actions are not drained here.
  /// The receiver's addresses said another protocol than the one an early
  /// offer went on: the machine, and the early transfer's compression, follow it.
  void hear_peer_protocol_locked();
  /// Known peer, known path: what TCP lane `id` on it (leaving by `local`,
  /// an interface or address) carried last time, for the scheduler — work
  /// for that rate at once, not one probe piece its kernel's slow start
  /// idles behind. Files the lane's figures under the path's key.
  std::optional<Rate> known_tcp_rate_locked(const std::string& peer, session::LaneNo id, const std::string& local,
                                            const std::string& remote_host);
  /// Known peer: UDP lanes whose receiver address is known before the
  /// receiver's addresses come (--lane specs name it; a discovered path
  /// knows lane 0's: its first lane, where a UDP lane left figures, so the
  /// receiver is known to take it) ask for their receiver end (udp_open) in
  /// TLS's last flight beside the offer, a round trip sooner. `plan` holds
  /// lane 0's ends and this host's network; the plan made from the
  /// addresses skips each of them once.
  void open_early_udp_lanes_locked(const LanePlan& plan, const std::string& peer);
  /// Compressed frames need protocol 7: towards an older receiver --compress
  /// auto (or always, which the caller refuses first) sends raw, and says so.
  compress::Mode compress_for_peer_locked(compress::Mode asked);
  std::optional<TransferOutcome> begin_transfer_locked(const files::SourceTree& tree, const TransferOptions& opts,
                                                       bool streamed = false, bool ordered = false);
  /// The machine for lane 0 (the bootstrap connection, on `path0`).
  void start_machine_locked(const session::LaneTraits& traits0, const session::PathSpec& path0);
  DataLane* lane_locked(session::LaneNo id);

  // DataLaneEvents: from the lanes' threads.
  void on_message(LaneNo lane, const session::ToSender& msg) override;
  void on_piece_started(LaneNo lane, uint32_t transfer, core::PieceId piece) override;
  void on_piece_hashed(LaneNo lane, uint32_t transfer, core::PieceId piece, const wire::Digest& hash) override;
  void on_piece_written(LaneNo lane, uint32_t transfer, core::PieceId piece) override;
  void on_piece_delivered(LaneNo lane, uint32_t transfer, core::PieceId piece) override;
  void on_transport_rate(LaneNo lane, Rate rate) override;
  void on_read_failed(LaneNo lane, uint32_t transfer, const std::string& reason) override;
  void on_closed(LaneNo lane, const std::string& reason, bool heard_peer) override;

  EventLog& log_;
  ConnectOptions opts_;
  std::unique_ptr<LocalHost> host_;
  std::string peer_name_;
  security::PeerInfo peer_;
  wire::PeerProtocol peer_protocol_;  // from the receiver's first addresses
  uint64_t session_id_ = 0;
  security::LaneSecret secret_;
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();
  bool background_ = false;
  std::map<std::string, LanePath> paths_;  // by path_key(PathSpec)
  /// The peer's paths' last figures (fast start), and each UDP lane's key there.
  PathMemory path_memory_;
  std::map<session::LaneNo, std::string> figure_keys_;
  /// Each UDP path's base RTT, shared by its lanes (by the same key).
  std::map<std::string, std::shared_ptr<transport::SharedBaseRtt>> shared_bases_;
  /// ... and its one startup (the first lane to find the pipe full ends it for all).
  std::map<std::string, std::shared_ptr<transport::SharedStartup>> shared_startups_;
  /// The UDP lanes' piece buffers, reused piece after piece (piece_buffers.hpp).
  std::shared_ptr<PieceBuffers> piece_buffers_ = PieceBuffers::make();
  /// Lanes a delay group has capped (a lane that comes under a rate split leaves its group uncapped).
  std::set<session::LaneNo> delay_capped_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<session::Sender> machine_;
  /// Lane 0 before its StreamLane exists: the early offer's frames are
  /// written on it during the TLS handshake (ConnectOptions::first_tree).
  std::unique_ptr<lanes::LaneLink> early_link_;
  /// The first transfer was offered in TLS's last flight: send() runs it.
  bool offered_early_ = false;
  /// A streamed walk waiting on its window (send_walking): the entries it
  /// has walked and its window. drain_locked wakes it the moment the acks
  /// let it go on, not at its next poll.
  struct WalkWait {
    size_t walked = 0, window = 0;
  };
  std::optional<WalkWait> walk_waiting_;
  /// The UDP paths open_early_udp_lanes_locked gave the machine.
  std::vector<session::PathSpec> early_udp_paths_;
  std::map<session::LaneNo, std::unique_ptr<DataLane>> lanes_;
  std::vector<std::unique_ptr<DataLane>> closed_;  // waiting to be destroyed outside mu_
  std::unique_ptr<Active> active_;
  std::deque<session::CheckHeld> checks_;  // for send()'s thread (reads the source)
  std::map<session::LaneNo, nlohmann::json> pending_open_;  // what a lane's connect learned, logged once it joins
  std::map<session::LaneNo, uint64_t> acked_seen_;  // TCP lanes' bytes acked at the last look
  Time next_progress_look_ = Time::zero();
  std::set<session::LaneNo> alive_;  // lanes whose threads have not reported their end
  struct Connector {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Connector> connectors_;  // finished ones are joined by bury_closed_lanes
  std::thread pacer_;
  /// The coupled caps of the TCP lanes, one per bottleneck (DataLane::bottleneck); under mu_.
  std::map<std::string, transport::TcpGroupCap> delay_groups_;
  void cap_delay_groups_locked(Time n);
  bool closing_ = false;
  // When the thread sleeping on cv_ means to wake anyway, and how many lanes
  // were opening at the last drain (the start waits for that to reach 0).
  std::chrono::steady_clock::time_point planned_wake_ = std::chrono::steady_clock::time_point::min();
  size_t opening_seen_ = 0;

  // Discovered paths follow the host's network: a watcher hears link,
  // address and route changes (rtnetlink), plans the paths again and gives
  // the machine the new list (session::Sender::set_paths).
  void watch_network();
  void replan_paths();
  void wake_watcher();  // after closing_ or replan_requested_ is set
  LanePlan plan_;  // what the paths were planned from (the host's network read again each time); under mu_
  bool replan_requested_ = false;  // the receiver's addresses changed; under mu_
  std::string last_plan_;          // the last plan handed to the machine; under mu_
  security::UniqueFd watch_fd_;    // rtnetlink, opened before the host is first read
  security::UniqueFd watch_wake_;  // eventfd: wakes the watcher (wake_watcher)
  std::thread watcher_;
};

}  // namespace braid::transfer
