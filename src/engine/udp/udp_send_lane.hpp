// The sending end of one UDP lane: the I/O shell around the pure
// transport::LaneSender. It has no protocol logic of its own — the core
// decides what to send and when; this class fills payloads, seals, batches
// syscalls and sleeps until the core's next deadline.
//
// The engine's contract (what a TCP lane's writer/reader pair does):
//   send_piece(piece, offset, length, bytes)  "send this piece"
//   cancel_piece(piece)                       "stop sending it" (the core forgets it)
//   UdpSendEvents::on_piece_started           the first datagram of it left
//   UdpSendEvents::on_piece_acked             "the peer has every byte of it"
//   UdpSendEvents::on_closed(reason)          "this lane is gone"
//   counters()                                per-lane numbers for --json
//
// Threads: send_piece / cancel_piece / close / counters may be called from
// any thread; they post to the lane's one I/O thread (which owns the socket,
// the core and the sealer) and wake it. Events arrive on the I/O thread.
// The destructor closes the lane and joins the thread: do not destroy a
// lane from inside one of its events, and do not hold a lock the events
// take while destroying it.
//
// The driver loop (quinn's order): receive feedback (recvmmsg) → open →
// on_datagram_received → acked ranges to the ledger → on_timeout if due →
// drain poll_transmit into a batch: fill each payload slot from the piece's
// bytes, seal, queue → flush (sendmmsg + GSO) → sleep until poll_timeout().
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/transport/lane_sender.hpp"
#include "engine/udp/lane_io.hpp"
#include "engine/udp/lane_limits_controller.hpp"
#include "engine/udp/piece_ledger.hpp"
#include "engine/udp/udp_lane_types.hpp"

namespace braid::udp {

class UdpSendLane {
 public:
  /// Opens the socket (bound and connected), derives the keys, builds the
  /// controller `cfg.cc` (capped at `cfg.rate_limit`) and starts the I/O
  /// thread. nullptr with `error` set if any of it fails.
  static std::unique_ptr<UdpSendLane> start(const UdpLaneConfig& cfg, UdpSendEvents& events, std::string& error);
  ~UdpSendLane();
  UdpSendLane(const UdpSendLane&) = delete;
  UdpSendLane& operator=(const UdpSendLane&) = delete;

  /// Sends `length` bytes of piece `piece`; the receiver sees them at
  /// offsets offset .. offset+length. `bytes` points at the first byte and
  /// stays alive (the lane holds the reference) until the piece is acked or
  /// cancelled — resends read it again. A piece id must not be sent twice
  /// while the first is still on the lane.
  void send_piece(uint64_t piece, uint64_t offset, uint64_t length, std::shared_ptr<const uint8_t> bytes);
  /// Drops the piece: nothing more of it is sent or resent, no ack event
  /// comes for it, and the lane lets go of its bytes.
  void cancel_piece(uint64_t piece);
  /// Caps what the lane puts on the network from now on, IP and UDP
  /// headers included (none: no cap).
  void set_rate_limit(std::optional<Rate> rate);
  /// Ends the lane; on_closed(reason) follows on the I/O thread. Idempotent.
  void close(const std::string& reason = "closed by the engine");
  /// Closes the lane and waits for its I/O thread to end: on_closed has run
  /// when this returns. The owner calls it before it lets go of the lane, so
  /// events that reach the lane through the owner's pointer (counters in an
  /// ack) find it whole. Idempotent; never from inside an event.
  void stop(const std::string& reason = "lane destroyed");

  bool closed() const { return stopped_.load(); }
  /// Whether any authentic datagram ever came back from the peer (any thread).
  bool heard_peer() const { return heard_peer_.load(std::memory_order_relaxed); }
  UdpLaneCounters counters() const;
  /// Test hook: sends `datagram` as is, outside the lane's state (forged or
  /// replayed packets). Any thread. Returns 0 or errno.
  int send_raw_datagram(std::span<const uint8_t> datagram) { return io_->socket->send_raw(datagram); }
  SocketAddress local_address() const { return local_; }
  /// Bytes per datagram: --packet-size, or what the path MTU allows.
  size_t packet_size() const { return io_->packet_size; }

 private:
  struct Command {
    enum class Kind { send, cancel, rate } kind;
    uint64_t piece = 0, offset = 0, length = 0;
    std::shared_ptr<const uint8_t> bytes;
    std::optional<Rate> rate;
  };

  UdpSendLane(UdpSendEvents& events, std::unique_ptr<LaneIo> io, std::unique_ptr<transport::LaneSender> sender,
              Duration idle_timeout, Duration first_contact_timeout);
  void run();
  void apply_commands();
  bool receive();
  /// recvmmsg calls per loop before the lane sends again.
  static constexpr int kMaxReceiveBatches = 4;
  bool transmit(Time now, bool& blocked);
  void end(const std::string& reason);
  void publish_counters();

  UdpSendEvents& events_;
  std::unique_ptr<LaneIo> io_;
  std::unique_ptr<transport::LaneSender> sender_;
  LaneLimitsController* limits_ = nullptr;  // inside sender_'s controller (I/O thread)
  PieceLedger ledger_;
  Duration idle_timeout_;
  Duration first_contact_timeout_;
  std::atomic<bool> heard_peer_{false};
  SocketAddress local_;
  Time last_heard_;
  uint64_t packets_retransmitted_ = 0;
  uint64_t pieces_acked_ = 0;
  uint64_t protocol_errors_ = 0;
  std::string close_reason_;   // I/O thread

  std::mutex mu_;              // guards inbox_, stop_reason_, counters_
  std::vector<Command> inbox_;
  std::vector<Command> work_;  // I/O thread's copy, reused
  std::atomic<bool> has_commands_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> stopped_{false};
  std::string stop_reason_;
  mutable std::mutex counters_mu_;
  UdpLaneCounters counters_;
  std::thread thread_;
};

}  // namespace braid::udp
