// The receiving side of one braid session: its lanes (each with a reader
// thread that opens frames, verifies pieces, writes them and acks them) and
// a control thread (the caller's) that answers offers, checks each finished
// transfer's root hash and puts its files in place.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/files/piece_hasher.hpp"
#include "engine/files/receive_tree.hpp"
#include "engine/lanes/lane_link.hpp"
#include "engine/security/session.h"
#include "engine/transfer/event_log.hpp"
#include "engine/transfer/report.hpp"
#include "engine/transfer/serial_worker.hpp"
#include "engine/udp/udp_recv_port.hpp"
#include "core/wire/messages.hpp"

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
};

class ReceiverSession {
 public:
  /// `peer_key`: the sender's identity (its key's fingerprint); with the
  /// offer it names a transfer for resume (files::transfer_key).
  ReceiverSession(const ReceiverConfig& cfg, EventLog& log, std::string peer, std::vector<uint8_t> peer_key,
                  uint64_t session_id, const security::LaneSecret& secret);
  ~ReceiverSession();

  /// Runs lane 0 (`link`, already past TLS) and the control loop until the
  /// sender says bye or every lane is gone.
  void run(std::unique_ptr<lanes::LaneLink> link, const std::vector<std::string>& advertised);
  /// A connection whose first frame header named this session and `lane_id`:
  /// it becomes a lane if its lane_join frame authenticates. false if refused.
  bool adopt_lane(security::UniqueFd fd, uint32_t lane_id);

  uint64_t id() const { return session_id_; }
  /// 0 if every transfer verified, else the exit code of the first failure.
  int outcome() const;
  /// Every finished transfer's report, then one for each transfer accepted
  /// and not finished (status "interrupted", "failed" or "incomplete", with
  /// the bytes it holds verified on disk for the next run).
  std::vector<TransferReport> reports() const;
  /// From any thread (SIGINT/SIGTERM): tells the sender `reason` (an error
  /// message), closes every lane with it, and makes run() end — which
  /// commits each unfinished transfer's resume journal and releases it. An
  /// offer whose held ranges are being read back stops and is refused.
  void interrupt(const std::string& reason);
  uint64_t rejected_frames() const;

 private:
  struct Lane;
  struct Incoming;
  struct UdpLane;
  class UdpEvents;
  struct Control {
    uint32_t lane_id;
    wire::FrameType type;
    std::vector<uint8_t> payload;
  };

  /// Lists the lane and starts its reader; false (the lane listed as closed) if no thread could start.
  bool start_lane(std::unique_ptr<lanes::LaneLink> link, bool needs_join);
  void reader_loop(Lane& lane, bool needs_join);
  std::span<uint8_t> piece_landing(Lane& lane);
  void handle_piece(Lane& lane, const lanes::Incoming& in);
  // UDP lanes (receiver_session.cpp, "UDP lanes").
  void handle_udp_open(Lane& via, std::span<const uint8_t> payload);
  void handle_udp_piece(std::span<const uint8_t> payload);
  /// Bytes of `bytes` consumed now for the lane's flow control (UdpRecvEvents::on_data).
  size_t on_udp_data(UdpLane& lane, uint64_t piece, uint64_t offset, std::span<const uint8_t> bytes);
  void on_udp_closed(UdpLane& lane, const std::string& reason);
  /// Hands a completed piece to udp_writer_ (verify, write, count).
  void finish_udp_piece(UdpLane& lane, uint64_t key);
  /// The bytes UDP lanes held back (udp_writer_ was behind) now count as consumed.
  void release_udp_credit();
  void drop_udp_pieces(uint32_t transfer_id);
  /// A verified piece's bytes to disk; false (and the transfer failed with the reason) if the write failed.
  bool write_verified(Incoming& t, uint64_t offset, std::span<const uint8_t> bytes);
  /// A verified, written piece counted once for the report and the resume journal.
  void count_verified(Incoming& t, uint32_t lane_id, uint32_t piece, const files::PieceRecord& record);
  void close_lane(Lane& lane, const std::string& reason, bool announce);
  /// Why one more lane cannot join now (empty: it can). Under mu_.
  std::string lane_limit_locked() const;
  template <class M>
  bool reply(uint32_t preferred_lane, const M& m);
  void handle_offer(const Control& c);
  void handle_done(const Control& c);
  void fail_transfer(Incoming& t, wire::ResultStatus status, const std::string& message);
  /// Before bytes are written to [offset, offset+length) of `t`: false (and
  /// the transfer failed) if a range held from an earlier run there cannot
  /// lose its claim durably first.
  bool may_write(Incoming& t, uint64_t offset, uint64_t length);
  bool ask_user(const wire::Offer& offer);
  void note(const std::string& line) const;

  ReceiverConfig cfg_;
  EventLog& log_;
  std::string peer_;
  std::vector<uint8_t> peer_key_;
  uint64_t session_id_;
  security::LaneSecret secret_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::vector<std::unique_ptr<UdpLane>> udp_lanes_;
  std::vector<std::string> advertised_;
  std::deque<Control> control_;
  std::map<uint32_t, std::shared_ptr<Incoming>> transfers_;
  std::vector<TransferReport> reports_;
  int outcome_ = 0;
  bool ending_ = false;
  std::atomic<bool> interrupted_{false};
  // Last: it runs jobs that use everything above. UDP lanes' finished
  // pieces and their replies run here, off the shared port's I/O thread,
  // which serves other sessions' lanes too.
  std::unique_ptr<SerialWorker> udp_writer_;
};

}  // namespace braid::transfer
