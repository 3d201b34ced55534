// The receiving side of one braid session in the engine: wiring between the
// pure session machine (core/session/receiver.hpp, every protocol decision:
// joins, the lane cap, offers' answers, acks, done and the result, what an
// unfinished transfer leaves) and the I/O — lanes' sockets, the pieces'
// bytes (verify before write), the file system (incoming_transfer.hpp), the
// clock, the log and the reports.
//
// Threads: the caller's (run(): the control thread) prepares offers, puts
// finished transfers in place and keeps what unfinished ones leave, off the
// machine's lock; each TCP or stream lane has a reader that opens frames,
// gathers, verifies and writes its pieces; UDP lanes' bytes come from their
// shared port's thread and are verified and written on one writer thread.
// Every event goes into the machine under mu_; its actions are carried out
// in the order it gave them (act_mu_), outside mu_.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/session/receiver.hpp"
#include "engine/lanes/lane_link.hpp"
#include "engine/security/session.h"
#include "engine/transfer/event_log.hpp"
#include "engine/transfer/incoming_transfer.hpp"
#include "engine/transfer/offer_decision.hpp"
#include "engine/transfer/piece_buffers.hpp"
#include "engine/transfer/live_display.hpp"
#include "engine/transfer/report.hpp"
#include "engine/transfer/serial_worker.hpp"
#include "engine/udp/udp_recv_port.hpp"

namespace braid::transfer {

struct ReceiverConfig {
  int root_fd = -1;          // the target directory (owned by the Receiver)
  bool yes = false;          // accept every offer without asking
  bool quiet = false;        // no lines on stderr (in-process tests)
  /// UDP lanes go on these shared ports, on the TCP listener's port number
  /// (owned by the Receiver); null: a port of its own per lane.
  udp::UdpRecvPorts* udp_ports = nullptr;
  std::vector<uint16_t> listen_ports;  // the TCP listeners' port numbers
  /// Most lanes (TCP and UDP) open at once in one session: each TCP lane may
  /// hold a chunk-sized piece buffer (up to 64 MiB), so a peer cannot make
  /// the receiver hold more than this many of them.
  size_t max_lanes = 64;
  /// Which symlinks of an offer are created (`recv --links`, files/link_policy.hpp).
  files::LinkPolicy links = files::LinkPolicy::safe;
  /// In-process tests only: what the disk does to each piece's write.
  std::shared_ptr<DiskFaults> disk_faults;
  /// Called with a transfer's report the moment it is verified (the
  /// command line prints its summary then, not when the receiver exits).
  std::function<void(const TransferReport&)> on_report;
  /// Who decides each offer when set (`braid serve`); else `yes` or the
  /// terminal. An offer undecided after `decision_timeout` is refused.
  OfferDecider decide_offer;
  std::chrono::milliseconds decision_timeout{120000};
  /// The sender proved the pairing code in this session (it was not pinned before).
  bool paired_now = false;
  /// Answer an offer part by part when its sender asks (protocol 9,
  /// session::ReceiverConfig::early_answers); off: every offer whole after
  /// its last part, as protocol 8 (tests compare the two).
  bool early_answers = true;
  /// In-process tests only: the protocol this receiver says it speaks.
  uint32_t protocol = wire::kProtocolVersion;
};

/// How long a session that ended behind its verdict (the goodbye came with
/// done) reads on for the sender to close its lanes: it does on reading the
/// verdict, half a round trip after it went. A dead sender costs this.
constexpr std::chrono::milliseconds kGoodbyeDrain{500};

class ReceiverSession {
 public:
  /// `peer_key`: the sender's identity (its key's fingerprint); with the
  /// offer it names a transfer for resume (files::transfer_key).
  ReceiverSession(const ReceiverConfig& cfg, EventLog& log, std::string peer, std::vector<uint8_t> peer_key,
                  uint64_t session_id, const security::LaneSecret& secret);
  ~ReceiverSession();

  /// Runs lane 0 (`link`, already past TLS) and the control loop until the
  /// session ends (bye, an error, every lane gone, interrupt()).
  void run(std::unique_ptr<lanes::LaneLink> link, const std::vector<std::string>& advertised);
  /// A connection whose first frame header named this session and `lane_id`:
  /// it becomes a lane if its lane_join frame authenticates. false if refused.
  bool adopt_lane(security::UniqueFd fd, uint32_t lane_id);

  uint64_t id() const { return session_id_; }
  const std::vector<uint8_t>& peer_key() const { return peer_key_; }
  /// The same sender opened another session: this one ends if it has no
  /// lane that carries messages left (session::Receiver::handle_peer_returned).
  void peer_returned();
  /// This host's addresses changed: the sender hears the new list.
  void advertise(const std::vector<std::string>& addresses);
  /// 0 if every transfer verified, else the exit code of the first failure.
  int outcome() const;
  /// Every finished transfer's report, then one for each transfer accepted
  /// and not finished (status "interrupted", "failed" or "incomplete", with
  /// the bytes it holds verified on disk for the next run).
  std::vector<TransferReport> reports() const;
  /// From any thread (SIGINT/SIGTERM): tells the sender `reason`, closes
  /// every lane with it and makes run() end — which commits each unfinished
  /// transfer's resume journal and releases it. An offer whose held ranges
  /// are being read back stops and is refused.
  void interrupt(const std::string& reason);
  uint64_t rejected_frames() const;
  /// The accepted transfers as the live display shows them: progress from
  /// the machine's transfer view, lanes with their addresses.
  std::vector<LiveTransfer> live() const;

 private:
  struct Lane;
  struct UdpLane;
  class UdpEvents;
  /// This host's addresses changed: tell the sender (on the control thread,
  /// not the accept loop's: a send may wait on a stuck lane).
  struct Advertise {
    std::vector<std::string> addresses;
  };
  /// Someone decided an offer that waited (cfg_.decide_offer), or its time ran out.
  struct OfferDecided {
    std::shared_ptr<const wire::Offer> offer;
    OfferDecision decision;
  };
  using Job = std::variant<session::PrepareOffer, session::PrepareOfferPart, session::FinalizeTransfer,
                           session::AbandonTransfer, Advertise, OfferDecided>;
  /// An offer waiting for cfg_.decide_offer's decision (control thread's).
  struct Waiting {
    std::shared_ptr<PendingOffer> pending;
    std::chrono::steady_clock::time_point deadline;
  };

  Time now() const;
  /// Feeds the machine (`f`, under mu_), then carries out its actions in order.
  template <class F>
  void drive(F&& f);
  /// From inside an action (act_mu_ held): feeds the machine; its actions
  /// join the ones being carried out.
  template <class F>
  void feed(F&& f);
  void act(session::RecvSendMessage& a);
  void act(session::RecvCloseLane& a);
  void act(session::PrepareOffer& a);
  void act(session::PrepareOfferPart& a);
  void act(session::FinalizeTransfer& a);
  void act(session::AbandonTransfer& a);
  void act(session::OpenUdpLane& a);
  void act(session::ExpectPiece& a);
  void act(session::SessionEnded& a);
  void act(session::RecvNote& a);
  void run_job(session::PrepareOffer& a);
  void run_job(session::PrepareOfferPart& a);
  void run_job(session::FinalizeTransfer& a);
  void run_job(session::AbandonTransfer& a);
  void run_job(Advertise& a);
  void run_job(OfferDecided& a);
  /// Hands an offer to cfg_.decide_offer; its answer comes as an OfferDecided job.
  void ask_decider(const std::shared_ptr<const wire::Offer>& offer, const OfferContext& ctx);
  /// Refuses the waiting offers past their deadline (control thread).
  void expire_waiting_offers();
  /// Tells the machine the engine's answer to an offer.
  void answer_offer(uint32_t id, std::variant<PreparedOffer, wire::Refuse> answer);
  OfferContext offer_context();

  // TCP and stream lanes (receiver_session_lanes.cpp).
  /// Lists a lane (not read yet).
  Lane* add_lane(std::unique_ptr<lanes::LaneLink> link, session::LaneTraits traits = session::LaneTraits::tcp());
  std::unique_ptr<Lane> make_lane(std::unique_ptr<lanes::LaneLink> link, session::LaneTraits traits);
  /// Starts its reader; false (the machine told) if no thread could start.
  bool start_reader(Lane& lane);
  void reader_loop(Lane& lane);
  std::span<uint8_t> piece_landing(Lane& lane);
  void handle_piece(Lane& lane, const lanes::Incoming& in);
  /// A piece gathered whole on `lane_id`, its hash checked (`hash_ok`):
  /// written if it should be (`write`: no other copy verified yet), then
  /// the machine told.
  void piece_arrived(uint32_t lane_id, IncomingTransfer& t, uint32_t piece, uint64_t offset,
                     std::span<const uint8_t> bytes, const wire::Digest& hash, bool hash_ok, bool write, Duration took);
  std::shared_ptr<IncomingTransfer> transfer_locked(uint32_t id) const;
  /// Sets the session's exit code if none is set yet.
  void set_outcome_locked(int code);
  TransferReport report_locked(const IncomingTransfer& t, bool finished) const;
  void note(const std::string& line) const;

  // UDP lanes (receiver_session_udp.cpp).
  void open_udp_lane(const session::OpenUdpLane& a);
  void expect_udp_piece(const wire::UdpPiece& header);
  size_t on_udp_data(UdpLane& lane, uint64_t piece, uint64_t offset, std::span<const uint8_t> bytes);
  void on_udp_closed(UdpLane& lane, const std::string& reason);
  void finish_udp_piece(UdpLane& lane, uint64_t key);
  void release_udp_credit();
  /// UDP pieces held in memory (gathering or queued for the disk) are over
  /// their bound: the lanes stop crediting their senders' windows.
  bool udp_backlogged() const;
  void drop_udp_pieces(uint32_t transfer_id);

  ReceiverConfig cfg_;
  EventLog& log_;
  std::string peer_;
  std::vector<uint8_t> peer_key_;
  uint64_t session_id_;
  security::LaneSecret secret_;
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();

  // Held while a machine's actions are carried out: they go in order. Timed:
  // interrupt() does not wait long behind a send stuck on a peer that stopped reading.
  std::timed_mutex act_mu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<session::Receiver> machine_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  /// The UDP lanes' piece buffers, reused piece after piece (piece_buffers.hpp).
  std::shared_ptr<PieceBuffers> piece_buffers_ = PieceBuffers::make();
  std::vector<std::unique_ptr<UdpLane>> udp_lanes_;
  std::map<uint32_t, std::shared_ptr<IncomingTransfer>> transfers_;  // accepted
  std::deque<Job> jobs_;  // for the control thread
  std::map<uint32_t, Waiting> waiting_;  // by transfer id; the control thread's
  std::deque<session::ReceiverAction> acting_;  // being carried out (under act_mu_)
  std::vector<std::string> advertised_;
  bool advertised_early_ = false;  // advertise() came before run() started the machine
  std::string end_reason_;
  std::string interrupt_reason_;
  uint64_t udp_buffered_peak_ = 0;  // the most UDP piece bytes held in memory at once
  /// Bytes of UDP pieces being gathered (not yet whole, or waiting for their
  /// header), all lanes: with the writer's queue, what the lanes' credit holds back.
  std::atomic<uint64_t> udp_gathering_{0};
  std::vector<TransferReport> reports_;
  int outcome_ = 0;
  bool ended_ = false;
  bool drain_ = false;  // mu_: lanes closed with RecvCloseLane::drain (run() waits for their readers)
  std::atomic<bool> interrupted_{false};
  // Last: it runs jobs that use everything above. UDP lanes' finished
  // pieces run here, off the shared port's I/O thread, which serves other
  // sessions' lanes too.
  std::unique_ptr<SerialWorker> udp_writer_;
};

}  // namespace braid::transfer
