// The sending side of a braid session as a pure state machine: every
// protocol decision of the sender, with no sockets, threads or clocks
// (quinn-proto's Connection is the model). The engine, the session simulator
// and the tests drive it the same way:
//
//   1. feed what happened, with the current time: handle_lane_connected,
//      handle_lane_failed, handle_message (a decoded message from the peer),
//      handle_piece_started / _hashed / _written / _delivered,
//      handle_transport_rate, handle_held_checked, handle_timeout — and the
//      user's commands: add_paths, start_transfer, close;
//   2. drain poll_action() until it returns nothing and carry each out in
//      order (send a message on a lane, open or close a lane, send or cancel
//      a piece, cap a lane's rate, check held ranges, report an outcome);
//   3. sleep until poll_timeout() or the next I/O event, and go to 1.
//
// What it decides: which lanes to open on which paths and when to open one
// again (a path that went away and came back), the lane join, which lane
// carries control (the live message lane with the lowest measured RTT) and
// where it moves when that lane dies, the offer and its answer, resume (the
// receiver's held ranges, once the engine has checked them against the
// source), which piece goes down which lane (core::Scheduler), the UDP
// lanes' piece headers and their ordered lane, done and the result, the
// split of --rate-limit over the live data lanes, whether the bootstrap lane
// carries data, and the UDP lane that never heard its peer (a TCP lane takes
// its path). Requests whose lane dies before their answer (offer, done,
// udp_open) go again on the next control lane; the receiver answers a
// repeated request as it answered the first.
//
// A transfer's outcome is reported as soon as it is known (the result, a
// refusal, every lane lost): nothing waits for a dead lane to close.
//
// Round trips at the end (protocol 8): done goes as soon as every piece's
// hash is known — with the last pieces still on their way, not a round trip
// after their acks — and the receiver answers it the moment its last bytes
// are verified and in place; a transfer marked `last` sends the goodbye with
// its done, so the receiver closes its lanes right behind the result.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "core/policy.hpp"
#include "core/scheduler.hpp"
#include "core/session/lane_traits.hpp"
#include "core/session/messages.hpp"
#include "core/units.hpp"
#include "core/wire/protocol_needs.hpp"

namespace braid::session {

/// The root hash over a transfer's piece records (files::root_hash in the
/// engine; any deterministic function in simulations).
using RootHashFn = std::function<wire::Digest(wire::HashAlgo, std::vector<PieceRecord>)>;

/// How often the caps are shared again as the lanes' measured rates move.
constexpr Duration kSplitEvery = Duration::millis(500);
/// How often a silent lane's path is tried with a fresh connection, and how
/// long each try may take to join (and 3 RTTs): a new try sends a new SYN
/// at once, where a try left waiting would resend its SYN only after TCP's
/// 1 s initial timer — so a path that returns is found within this.
constexpr Duration kScoutEvery = Duration::millis(500);
/// A further stream is kept if the transfer moves this much faster with it.
constexpr double kGrowthGain = 1.12;
/// The least time a stream trial's rates are measured over (and 8 RTTs).
constexpr Duration kGrowthWindow = Duration::millis(1500);

struct SenderConfig {
  /// Caps the whole transfer: shared over the live data lanes by what each
  /// delivers (core/session/rate_split.hpp), again whenever one comes or
  /// goes and every kSplitEvery while a transfer runs.
  std::optional<Rate> rate_limit;
  /// --metered IFACE=RATE: the lanes leaving through IFACE share RATE.
  std::map<std::string, Rate> metered;
  /// Streams per path follow what helps: while a transfer runs, a TCP path
  /// gets one more lane at a time, kept only if the whole transfer then
  /// moves kGrowthGain faster (a path window-limited by a long RTT or
  /// loss gains; one at its bottleneck, or sharing a bottleneck with
  /// another path, does not: it stays as it is), up to this many lanes per
  /// path. 0: the streams stay as given (`--streams N`).
  size_t max_streams = 0;
  /// A TCP lane whose transport made no progress (handle_transport_progress)
  /// for max(this, 4 RTT) while it had data outstanding is silent: a fresh
  /// connection is tried on its path every kScoutEvery (its SYN goes out at
  /// once, where the silent connection waits for TCP's backed-off
  /// retransmission timer, 3-4 s after a 4 s outage), and takes the silent
  /// lane's place the moment it joins. Zero: never.
  Duration silent_after = Duration::seconds(1);
  /// Most lanes open at once, the bootstrap lane included.
  size_t max_lanes = 16;
  /// A lane that has not connected within this is given up (its join is
  /// pipelined: it takes pieces at once, protocol 8).
  Duration join_timeout = Duration::seconds(3);
  /// A lane that worked and then died is opened again on its path after
  /// this, doubling per failed attempt up to reopen_max_backoff.
  Duration reopen_backoff = Duration::millis(500);
  Duration reopen_max_backoff = Duration::seconds(4);
  /// Consecutive failed attempts after which a path is given up.
  uint32_t reopen_attempts = 20;
  /// How long a transfer survives with no lane open (none joined, none
  /// joining): a path may come back. Zero: it fails at once.
  Duration no_lane_grace = Duration::zero();
  /// How long a transfer survives with lanes open (UDP lanes) but none that
  /// carries messages (lane 0 died, say): the path of such a lane is opened
  /// again meanwhile and the UDP lanes go on. The receiver waits as long
  /// (ReceiverConfig::message_lane_grace).
  Duration message_lane_grace = Duration::seconds(10);
  /// No answer to the offer, or no result after done, within this: the
  /// transfer fails (the receiver may be asking its user: generous).
  Duration answer_timeout = Duration::seconds(300);
  /// Nothing in flight, nothing queued and no timer with bytes left: the
  /// scheduler would never move again. Say so after this instead of hanging.
  Duration stuck_after = Duration::seconds(5);
  /// The receiver's protocol, from the addresses it sent first (the engine
  /// reads them before start): an offer that needs more ends at once
  /// (End::unsupported), and lanes join with the older of the two versions.
  wire::PeerProtocol peer;
  RootHashFn root_hash;
  /// Encoded bytes of entries per offer frame (wire::kOfferPartBytes; tests
  /// make it small to see many parts).
  size_t offer_part_bytes = wire::kOfferPartBytes;
};

/// The offer's entries the machine can read: entries `first` … size() - 1
/// (by their index in the whole offer); the ones before have left the
/// caller's memory.
struct EntryWindow {
  size_t first = 0;
  std::span<const wire::ManifestEntry> held;
  size_t size() const { return first + held.size(); }
  /// Reading an entry let go is the machine's bug, never the peer's doing:
  /// it throws rather than read freed memory.
  const wire::ManifestEntry& operator[](size_t i) const {
    if (i < first || i >= size()) throw std::out_of_range("the offer's entry " + std::to_string(i) + " is not held");
    return held[i - first];
  }
  /// Entries [from, to) (from >= first).
  std::span<const wire::ManifestEntry> range(size_t from, size_t to) const {
    if (from < first || to < from || to > size())
      throw std::out_of_range("the offer's entries from " + std::to_string(from) + " are not held");
    return held.subspan(from - first, to - from);
  }
  /// The whole offer, where nothing has left yet.
  std::span<const wire::ManifestEntry> whole() const {
    if (first != 0) throw std::out_of_range("the offer's first entries are not held");
    return held;
  }
  auto begin() const { return held.begin(); }
  auto end() const { return held.end(); }
};

/// What one transfer should carry.
struct TransferSpec {
  std::vector<wire::ManifestEntry> entries;
  /// Instead of `entries`: the caller's own, read in place and never copied
  /// (a million entries are ~0.3 GB; the engine's source tree holds them
  /// anyway). They must stay alive and unchanged until the transfer ends;
  /// the machine stops reading them once the offer is answered.
  const std::vector<wire::ManifestEntry>* entries_in_place = nullptr;
  /// With entries_in_place: the offer's index of its first element (null:
  /// 0). A streamed walk lets go of the entries before
  /// Sender::entries_needed_from() (erases them from the vector's front and
  /// moves this on), so that a tree of any size is held in a window.
  const size_t* entries_in_place_first = nullptr;
  /// The entries come in batches (Sender::add_entries) while the caller
  /// still walks the tree: each frame of the offer goes as soon as it is
  /// full, so the receiver holds and checks the first parts while later
  /// directories are still being read. The offer is answered after its last.
  bool streamed = false;
  /// A streamed offer: the caller can read pieces of the entries added so
  /// far while the walk goes on, so a receiver of protocol 9 is asked to
  /// answer part by part (wire::Offer::early_answers) and pieces of the
  /// entries it accepted flow before the last part. Not asked for a sync,
  /// a dry run, a probe or answer_only (their answer needs the whole offer).
  bool early_pieces = false;
  /// The entries come in path order (each directory's entries right after
  /// it, by name) and none is a hard link: said to a receiver of protocol
  /// 10 answering part by part (wire::Offer::ordered), which then keeps no
  /// entry it has written. The caller's walk makes sure of it.
  bool ordered = false;
  wire::HashAlgo hash = wire::HashAlgo::xxh3_128;
  uint64_t chunk_size = 1 << 20;
  std::unique_ptr<core::Policy> policy;  // braid's unless set
  /// How files that exist on the receiver are met (sync.hpp).
  wire::SyncOptions sync;
  /// Only ask: the transfer ends with the receiver's answer (End::answered)
  /// and sends nothing (tests of the receiver's checks).
  bool answer_only = false;
  /// The receiver verifies and acks the pieces and writes nothing (wire::Offer::discard).
  bool discard = false;
  /// Only lanes on these paths (kind, local and remote alike) carry this
  /// transfer's pieces: a probe measures one path alone. None: every lane.
  std::optional<std::vector<PathSpec>> only_paths;
  /// The session ends with this transfer: the goodbye goes with its done
  /// (wire::Bye's after_transfer), so the receiver closes its lanes right
  /// behind its verdict and close() finds them closing, not a round trip later.
  bool last = false;
};

struct TransferOutcome {
  enum class End {
    result,       // the receiver's verdict (`result`)
    refused,      // the receiver refused the offer (`refusal`)
    lanes_lost,   // every lane closed before the end
    peer_error,   // the receiver ended the session
    bad_piece,    // the receiver's hash of a piece did not match
    read_failed,  // the engine could not read the source (handle_read_failed)
    timed_out,    // no answer or no result in time
    stuck,        // internal error: the scheduler stopped handing out work
    answered,     // answer_only: the receiver accepted (`accepted`, `held`)
    interrupted,  // interrupt(): the user stopped it
    cancelled,    // cancel_transfer(): the session goes on
    unsupported,  // the receiver's protocol is older than the offer needs (`message` says what); nothing was sent
  };
  End end = End::lanes_lost;
  wire::ResultStatus result = wire::ResultStatus::verified;
  wire::RefuseReason refusal = wire::RefuseReason::declined;
  std::string message;
  bool accepted = false;               // answered
  std::vector<wire::HeldRange> held;   // answered: what the receiver holds
  std::vector<wire::FileDecision> files;  // answered: the receiver's sync verdicts
  uint32_t extraneous_count = 0;          // answered: what --delete removes there
  std::vector<std::string> extraneous;
  bool verified() const { return end == End::result && result == wire::ResultStatus::verified; }
};

// ---- actions ------------------------------------------------------------------

/// Put `msg` on lane `lane` (a lane that carries messages).
struct SendMessage {
  LaneNo lane = 0;
  ToReceiver msg;
};
/// Connect a new lane on `path` (TCP, stream) or start a UDP lane towards
/// `udp_address` (the receiver's answer to udp_open). The engine reports
/// handle_lane_connected or handle_lane_failed. The join itself is the
/// machine's (a SendMessage of lane_join follows the connect).
struct OpenLane {
  LaneNo lane = 0;
  PathSpec path;
  std::string udp_address;
};
/// Release everything the lane holds; no event of it is expected any more.
struct CloseLane {
  LaneNo lane = 0;
  std::string reason;
};
/// Read piece `assign` of transfer `transfer` and send it on `lane`. A lane
/// without messages (UDP) reads and hashes it first and waits for
/// ReleasePiece; the others stream it, hashing as they go.
struct SendPiece {
  LaneNo lane = 0;
  uint32_t transfer = 0;
  core::Assign assign;
};
/// The piece's header went ahead on the ordered lane: its bytes may go now.
struct ReleasePiece {
  LaneNo lane = 0;
  uint32_t transfer = 0;
  core::PieceId piece = 0;
};
/// Stop sending the piece on the lane (a TCP lane says piece_abort if it
/// had begun); no further event of it is expected.
struct CancelPiece {
  LaneNo lane = 0;
  uint32_t transfer = 0;
  core::PieceId piece = 0;
};
/// Cap what the lane puts on the network, IP and transport headers
/// included: what a metered plan bills (none: no cap).
struct SetLaneRate {
  LaneNo lane = 0;
  std::optional<Rate> rate;
};
/// Check the receiver's held ranges against the source (read and hash
/// them); answer with handle_held_checked.
struct CheckHeld {
  uint32_t transfer = 0;
  std::vector<wire::HeldRange> held;
};
struct TransferEnded {
  uint32_t transfer = 0;
  TransferOutcome outcome;
};
/// Something worth a line in the log (a lane given up, a path reopened, a
/// message sent again).
struct Note {
  std::string event;  // lane_open, lane_closed, lane_failed, udp_fallback, ordered_lane, ...
  LaneNo lane = 0;
  std::string detail;
  uint64_t count = 0;  // ordered_lane: headers sent again
};

using SenderAction =
    std::variant<SendMessage, OpenLane, CloseLane, SendPiece, ReleasePiece, CancelPiece, SetLaneRate, CheckHeld,
                 TransferEnded, Note>;

class Sender {
 public:
  explicit Sender(SenderConfig cfg);

  // ---- commands -------------------------------------------------------------
  /// The bootstrap lane (id 0) is connected and authenticated, on `path0`:
  /// should it die, a lane is opened again on that path like on any other.
  void start(const LaneTraits& lane0, const PathSpec& path0, Time now);
  /// Paths for further lanes: one lane per entry (a path listed twice gets
  /// two lanes). With any UDP path the bootstrap lane carries no data: it
  /// carries the UDP lanes' piece headers and acks, which must not queue
  /// behind data. Beyond max_lanes the rest is dropped.
  void add_paths(const std::vector<PathSpec>& paths, Time now);
  /// The host's network changed (an interface or address came or went, a
  /// link went down or up): `wanted` is the whole list of paths for further
  /// lanes now, as add_paths takes it. Paths no longer wanted close their
  /// lanes at once, the receiver told why; new ones open lanes (within
  /// max_lanes); wanted paths waiting to be retried or given up are tried
  /// again at once. Lane 0's own path is not in `wanted`: it is left alone
  /// unless `bootstrap_path_present` is false (the interface lane 0 left
  /// through is gone): then lane 0 closes too and is not opened again there.
  void set_paths(const std::vector<PathSpec>& wanted, Time now, bool bootstrap_path_present = true);
  /// The receiver's addresses as it last advertised them during the session
  /// (Note "peer_addresses" says when they change); empty before.
  const std::vector<std::string>& peer_addresses() const { return peer_addresses_; }
  /// Offers a transfer; its id. One at a time: false while one runs.
  std::optional<uint32_t> start_transfer(TransferSpec spec, Time now);
  /// More entries of a streamed transfer (TransferSpec::streamed), in walk
  /// order: `batch` is appended (with entries_in_place it must be empty:
  /// the caller appended to its own vector). Every frame that is full goes
  /// at once; `last` (the walk is over) sends the rest as the last part.
  /// Ignored when no streamed transfer is being offered (it ended, say).
  void add_entries(std::vector<wire::ManifestEntry> batch, bool last, Time now);
  /// A streamed walk's window (issue 18: memory bounded whatever the tree).
  /// The first entry of the running transfer the machine may still read:
  /// the caller may let go of every entry before it (entries_in_place_first).
  /// 0 unless the receiver answers part by part; then the least of the first
  /// entry it has not accepted (and the start of the part holding it, which
  /// a lost lane sends again), the first whose holes are not yet planned,
  /// and the first whose bytes are not all delivered (a lane may still read
  /// them). Moves only forward.
  size_t entries_needed_from();
  /// Whether a streamed walk that has `walked` entries should wait before
  /// it adds more: more than `window` past entries_needed_from(), and
  /// something under way that moves it on without more entries (a sent part
  /// the receiver has not accepted, or planned bytes not yet delivered).
  /// Never while the receiver does not answer part by part: nothing would.
  bool walk_should_wait(size_t walked, size_t window);
  /// Ends the session: bye, then every lane closes.
  void close(Time now);
  /// The user stopped the sender (a signal): the receiver hears `reason` (it
  /// commits what it verified) and the running transfer ends with it.
  void interrupt(const std::string& reason, Time now);
  /// Stops the running transfer and keeps the session: its pieces are
  /// cancelled on their lanes, the receiver hears `reason` (wire::Cancel)
  /// and abandons it, and it ends with End::cancelled. The next transfer
  /// may start at once, on the same lanes.
  void cancel_transfer(const std::string& reason, Time now);

  // ---- events ---------------------------------------------------------------
  /// What the receiver speaks, read from its addresses after the machine
  /// started on a remembered version (an offer made in TLS's last flight,
  /// before the addresses came). Lanes join with the version heard from
  /// now on; an offer already sent that needs more than the receiver speaks
  /// ends the transfer as start_transfer would have (End::unsupported), in
  /// one line, instead of leaving it to wait for an answer that never comes.
  /// `also`: what the engine's part of the offer needs beyond what the offer
  /// shows (compressed frames: protocol 7).
  void handle_peer_protocol(const wire::PeerProtocol& peer, Time now, const wire::ProtocolNeed& also = {});
  void handle_lane_connected(LaneNo lane, const LaneTraits& traits, Time now);
  /// The lane is gone (connect or write failed, EOF, reset, keepalive, the
  /// lane's transport gave up). `heard_peer`: whether anything authentic
  /// ever came back on it (a UDP lane that never heard its peer: UDP does
  /// not get through on that path).
  void handle_lane_failed(LaneNo lane, const std::string& reason, bool heard_peer, Time now);
  void handle_message(LaneNo lane, const ToSender& msg, Time now);
  void handle_piece_started(LaneNo lane, core::PieceId piece, Time now);
  /// The engine knows the piece's hash (read whole first, or at its last frame).
  void handle_piece_hashed(LaneNo lane, core::PieceId piece, const wire::Digest& hash, Time now);
  void handle_piece_written(LaneNo lane, core::PieceId piece, Time now);
  /// A transport_acks lane: the peer holds every byte of the piece.
  void handle_piece_delivered(LaneNo lane, core::PieceId piece, Time now);
  /// The lane's transport moved (a TCP lane's bytes were acked by the peer's
  /// kernel), or it has nothing outstanding: it is not silent. Lanes the
  /// engine reports this for are watched for silence (silent_after).
  void handle_transport_progress(LaneNo lane, Time now);
  void handle_transport_rate(LaneNo lane, Rate rate, Time now);
  /// The source could not be read: the transfer fails with `reason`.
  void handle_read_failed(const std::string& reason, Time now);
  /// The held ranges that matched the source (with their hashes); the rest
  /// is sent again.
  void handle_held_checked(uint32_t transfer, const std::vector<wire::HeldRange>& matched, uint64_t rejected_bytes,
                           Time now);
  void handle_timeout(Time now);

  // ---- actions --------------------------------------------------------------
  std::optional<SenderAction> poll_action();
  std::optional<Time> poll_timeout() const;

  // ---- what reports see -----------------------------------------------------
  struct LaneView {
    LaneNo id = 0;
    PathSpec path;
    LaneTraits traits;
    bool open = false;          // joined and not closed
    bool data = false;          // takes pieces
    std::optional<core::LaneId> sched;  // in the running transfer's scheduler
    std::optional<Rate> rate_cap;
    std::string close_reason;
    Time opened = Time::never();
  };
  std::vector<LaneView> lanes() const;
  /// The running (or last) transfer's scheduler; null before the first.
  const core::Scheduler* scheduler() const { return transfer_ ? transfer_->sched.get() : nullptr; }
  std::optional<LaneNo> control_lane() const;
  size_t open_lanes() const;
  /// The engine connected lane `id`: is it still wanted (not given up)?
  bool expects_connect(LaneNo id) const;
  /// Lanes still connecting or joining (connect() waits a little for them).
  size_t opening_lanes() const;
  /// The lane a scheduler lane id of the running (or last) transfer stands for.
  std::optional<LaneNo> sched_lane(core::LaneId id) const;
  bool transfer_running() const { return transfer_ && !transfer_->ended; }
  uint64_t resumed_bytes() const { return transfer_ ? transfer_->resumed_bytes : 0; }
  uint64_t resume_rejected_bytes() const { return transfer_ ? transfer_->resume_rejected_bytes : 0; }
  /// Held ranges the check kept (resumed or reused from the receiver's older versions).
  uint64_t resumed_ranges() const { return transfer_ ? transfer_->resumed_ranges : 0; }
  /// Sync: bytes of the files the receiver keeps as they are (never sent).
  uint64_t kept_bytes() const { return transfer_ ? transfer_->kept_bytes : 0; }
  /// Sync: the receiver's verdicts and what --delete removes there (empty before its accept).
  const std::vector<wire::FileDecision>& sync_files() const;
  uint32_t extraneous_count() const { return transfer_ ? transfer_->extraneous_count : 0; }
  /// The held ranges the check kept, by offset.
  const std::vector<wire::HeldRange>& reused_ranges() const;
  /// When the running transfer's last piece was acked (Time::never() before).
  Time all_acked_at() const { return transfer_ ? transfer_->all_acked_at : Time::never(); }
  bool closed() const { return closing_; }
  /// The receiver ends the session on its own right behind the result it
  /// sent (the goodbye went with done): close() has nothing to wait for.
  bool peer_ends() const { return peer_ends_; }

 private:
  enum class LaneState { connecting, joining, open, closed };
  struct Lane {
    LaneNo id = 0;
    size_t slot = SIZE_MAX;  // the path slot that opened it (lane 0: slot 0, its own path)
    PathSpec path;
    LaneTraits traits;
    LaneState state = LaneState::connecting;
    Time deadline = Time::never();  // connect + join
    bool data = true;
    bool heard = false;
    bool welcomed = false;  // the receiver took its join (lane 0: it came with the session)
    bool transport_failed = false;  // its socket or transport failed (not closed by our decision)
    Time progress_at = Time::never();   // its transport's last progress (never: not watched)
    std::optional<LaneNo> scout;        // a fresh connection trying its path while it is silent
    Time next_scout = Time::never();
    std::optional<LaneNo> replaces;     // a scout: the silent lane whose place it takes
    std::optional<Rate> rate_cap;
    std::string close_reason;
    Time opened = Time::never();
    std::optional<core::LaneId> sched;
    Time last_heard = Time::never();  // the lane's last message, ack or transport progress
    // Pieces given to a lane without messages, waiting for their hash (then
    // their header goes on the ordered lane): piece -> assign.
    std::map<core::PieceId, core::Assign> awaiting_hash;
  };
  /// One wanted lane on one path; it opens again when its lane dies.
  struct Slot {
    PathSpec path;
    std::optional<LaneNo> lane;
    bool worked = false;  // a lane of this slot was open once
    uint32_t failures = 0;
    Time retry_at = Time::never();
    bool given_up = false;
    bool removed = false;  // its path went away (set_paths): opened again only if it returns
    bool refused = false;  // the receiver refused its lane: never opened again
    bool extra = false;    // added by stream growth: lives as long as its path's first slot
  };
  /// Streams that follow what helps (SenderConfig::max_streams).
  struct Growth {
    std::set<std::string> settled;  // paths where a further stream added nothing
    std::optional<size_t> trial;    // the slot on trial
    Time measure_from = Time::never();
    double base_rate = 0;           // bytes/s over the window before the trial
    Time next = Time::never();      // the next sample
    std::deque<std::pair<Time, uint64_t>> delivered;  // (time, bytes delivered) every 100 ms
    size_t next_path = 0;           // round robin over the paths
  };
  struct Request {
    enum class Kind { offer, done, udp_open } kind;
    LaneNo sent_on = 0;
    LaneNo udp_lane = 0;  // udp_open
    Time deadline = Time::never();
    /// No answer by then: sent again on another message lane (its lane may
    /// be dead without a word: no data in flight on it shows a stall).
    Time resend_at = Time::never();
    Duration resend_after;
  };
  struct Transfer {
    uint32_t id = 0;
    /// The offer; its entries are here, or the caller's (`in_place`).
    wire::Offer offer;
    const std::vector<wire::ManifestEntry>* in_place = nullptr;
    const size_t* in_place_first = nullptr;
    EntryWindow entries() const {
      if (!in_place) return {0, offer.entries};
      return {in_place_first ? *in_place_first : 0, *in_place};
    }
    uint64_t total_bytes = 0;  // of the files (regular files laid end to end)
    /// Where the offer is cut into frames (wire::offer_cuts), until it is
    /// answered: each part is made from `offer` when it is sent.
    std::vector<size_t> offer_cuts;
    /// Frames of the offer made so far (the head is frame 0): frames
    /// 1 … frames_sent - 1 follow the head each time it is sent.
    size_t frames_sent = 0;
    bool streaming = false;  // a streamed offer whose last entries have not come
    /// Protocol 9 (wire::AcceptPart): entries the receiver accepted before
    /// the whole offer, and their file bytes. The plan covers the whole
    /// chunks of those bytes (a chunk never grows once it exists) until the
    /// final accept extends it to the end; done waits for that accept.
    size_t early_entries = 0;
    uint64_t early_bytes = 0;
    bool awaiting_final = false;  // pieces flow, the offer's closing accept has not come
    /// The holes of sparse files are delivered unsent, as a whole offer's
    /// kept records are: those of the plan so far are taken; entry
    /// `hole_entry` is the first that may hold one beyond it, and starts at
    /// transfer offset `hole_start`.
    size_t hole_entry = 0;
    uint64_t hole_start = 0;
    /// entries_needed_from's cursor: every entry before `done_entry` lies
    /// wholly before the plan's delivered prefix; it starts at `done_start`.
    size_t done_entry = 0;
    uint64_t done_start = 0;
    size_t measured = 0;     // entries measured into frames (streamed)
    size_t frame_bytes = 0;  // encoded bytes of the frame being filled (streamed)
    bool answer_only = false;
    std::optional<std::vector<PathSpec>> only_paths;
    std::unique_ptr<core::Policy> policy;  // until the answer
    std::unique_ptr<core::Scheduler> sched;
    std::vector<LaneNo> sched_lanes;  // scheduler lane id -> lane
    std::vector<std::optional<wire::Digest>> hashes;  // by piece id
    enum class Phase { offered, checking, sending, verifying } phase = Phase::offered;
    bool ended = false;
    bool last = false;       // TransferSpec::last
    bool done_sent = false;  // early: every hash known, pieces still in flight
    /// Held (or kept) ranges of the receiver's are sent again (the check
    /// rejected them, or they overlap): done waits for the last ack.
    bool held_resent = false;
    uint64_t resumed_bytes = 0, resume_rejected_bytes = 0, resumed_ranges = 0;
    // Sync: the receiver's verdicts, and the records of the files it keeps.
    std::vector<wire::FileDecision> files;
    /// Protocol 11: verdicts that came ahead of the accept (wire::AcceptFiles).
    std::vector<wire::FileDecision> files_ahead;
    std::vector<wire::HeldRange> kept;
    std::vector<wire::HeldRange> reused;  // held ranges that matched the source, by offset
    uint64_t kept_bytes = 0;
    uint32_t extraneous_count = 0;
    std::optional<LaneNo> ordered_lane;      // UDP headers, then done
    std::vector<wire::UdpPiece> udp_headers;  // every header sent (again on a new ordered lane)
    Time all_acked_at = Time::never();
    Time idle_since = Time::never();
    Time no_lane_since = Time::never();
  };

  Lane* find(LaneNo id);
  const Lane* find(LaneNo id) const;
  /// The running transfer's receiver has accepted entries part by part and
  /// pieces flow: only then can entries leave (entries_needed_from).
  bool answering_part_by_part() const;
  /// A streamed offer answered part by part whose every part sent was
  /// accepted: it owes no answer until the walk sends the next.
  bool offer_answered_so_far() const;
  bool message_lane_open() const;
  /// How long the transfer may go on without a lane that carries messages.
  Duration lane_grace() const;
  void open_slot(size_t slot, Time now);
  void lane_open(Lane& lane, Time now);
  /// The receiver took the lane (its welcome; a lane without a join: its
  /// connect): its path worked, and the lane's line is logged.
  void lane_welcomed(Lane& lane);
  void lane_gone(Lane& lane, const std::string& reason, bool announce, Time now);
  void send_control(ToReceiver msg, Time now);
  void send_request(Request::Kind kind, ToReceiver msg, LaneNo udp_lane, Time now);
  /// Sends a request's message on `lane` (an offer in parts: with its parts).
  void push_request_message(LaneNo lane, const ToReceiver& msg);
  /// Part k of the running transfer's offer (k ≥ 1).
  wire::OfferPart make_offer_part(size_t k) const;
  /// A streamed offer: cuts the entries measured so far into frames and
  /// sends each full one (with `last`, the rest as the last).
  void cut_streamed_offer(bool last, Time now);
  /// Frame k of the offer is cut: the head goes as the offer request, a
  /// part on the request's lane.
  void send_offer_frame(size_t k, bool last, Time now);
  /// The scheduler's plan grown to `total` bytes, and a hash slot for each new piece.
  void grow_plan(Transfer& t, Bytes total);
  /// The hole records of [plan total, to) of the accepted entries (see
  /// Transfer::hole_entry); moves the cursor to `to`.
  std::vector<wire::HeldRange> holes_up_to(Transfer& t, uint64_t from, uint64_t to);
  /// The receiver accepted the offer's first `entries` entries (protocol 9).
  void early_accept(const wire::AcceptPart& m, LaneNo on, Time now);
  void resend_requests_from(LaneNo dead, Time now);
  /// When a request sent on `lane` now is sent again if unanswered.
  Duration resend_after(LaneNo lane) const;
  /// A lane that stalled and delivered nothing since: maybe dead.
  bool suspect(const Lane& l) const;
  std::optional<LaneNo> control_lane_except(std::optional<LaneNo> avoid) const;
  void attach(Lane& lane, Time now);
  /// The running transfer's pieces may go down this lane's path.
  bool path_allowed(const Lane& lane) const;
  void drain_scheduler(Time now);
  void split_rate(Time now);
  /// Silent lanes: scouts opened, joined scouts take their place.
  void watch_silence(Time now);
  Duration silence_limit(const Lane& l) const;
  void scout_joined(Lane& scout, Time now);
  /// Stream growth: samples the delivered bytes, runs and judges trials.
  void grow_streams(Time now);
  double delivered_rate(Duration window, Time now) const;
  Duration growth_window() const;
  /// Which lanes carry data: lane 0 (not while UDP lanes do), backup paths
  /// (only while no other path's lane does).
  void update_data_lanes(Time now);
  void update_bootstrap_data(Time now);
  void maybe_finish(Time now);
  /// A verified result came before the last acks: the pieces still in
  /// flight count as delivered, each by the lane whose copy started first.
  void credit_in_flight(Time now);
  /// Every piece's hash is known (sent at least once, or held): done can go.
  bool all_hashed() const;
  /// Sends done (and, for the last transfer, the goodbye behind it).
  void send_done(Time now);
  void send_ordered(const ToReceiver& msg, Time now);
  /// Why the receiver cannot take the running transfer's offer, in one line
  /// (empty: it can): the offer's own needs, or `also` if newer.
  std::string unreadable_by_peer(const wire::ProtocolNeed& also) const;
  void end_transfer(TransferOutcome outcome);
  void check_lanes_left(Time now);
  core::Scheduler& sched() { return *transfer_->sched; }
  std::optional<core::LaneId> sched_id(LaneNo lane) const;
  void push(SenderAction a) { actions_.push_back(std::move(a)); }

  SenderConfig cfg_;
  std::vector<Lane> lanes_;  // by id order; never erased (ids are unique)
  std::vector<Slot> slots_;
  std::vector<std::string> peer_addresses_;
  LaneNo next_lane_ = 1;
  bool any_udp_ = false;
  bool closing_ = false;
  /// The last transfer's result came after its goodbye: the receiver is
  /// closing every lane, which is no news and no path to open again.
  bool peer_ends_ = false;
  Time next_split_ = Time::never();  // the next re-split of the caps while a transfer runs
  Growth growth_;
  uint32_t next_transfer_ = 1;
  std::unique_ptr<Transfer> transfer_;
  std::vector<std::pair<Request, ToReceiver>> requests_;  // waiting for their answer
  std::deque<SenderAction> actions_;
};

}  // namespace braid::session
