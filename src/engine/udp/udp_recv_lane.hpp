// The receiving end of one UDP lane: the pure transport::LaneReceiver, the
// lane's opener and sealer, and its peer. Datagrams come in through a
// UdpRecvPort (udp_recv_port.hpp), which finds the lane, has it open them
// (tag and replay window) and feeds the core; the core hands each DATA frame
// to UdpRecvEvents::on_data (the engine verifies and pwrites) and says when
// to send feedback (acks, MAX_DATA), which the port seals with the lane's
// key and sends to the lane's peer.
//
// The lane listens to the source of the first datagram that authenticates
// with its keys — a forged or stray datagram cannot claim it — and to
// nobody else from then on.
//
// start() gives the lane a port of its own (cfg.local; an exclusive port,
// whose socket connects to the peer); start_on() puts it on a shared port,
// as `braid recv` does with the port its TCP listener has.
//
// Threads: one I/O thread (the port's) owns the lane's state and calls its
// events; close() and counters() from any thread; the destructor closes the
// lane and waits until the port has let go of it (on_closed has returned).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/transport/lane_receiver.hpp"
#include "engine/udp/datagram_crypto.hpp"
#include "engine/udp/udp_lane_types.hpp"
#include "engine/udp/udp_recv_port.hpp"

namespace braid::udp {

class UdpRecvLane {
 public:
  /// On a port of its own, bound to cfg.local (port 0: any).
  static std::unique_ptr<UdpRecvLane> start(const UdpLaneConfig& cfg, UdpRecvEvents& events, std::string& error);
  /// On `port`, shared with other lanes (cfg.local, cfg.socket and cfg.fault
  /// are the port's business and ignored here).
  static std::unique_ptr<UdpRecvLane> start_on(std::shared_ptr<UdpRecvPort> port, const UdpLaneConfig& cfg,
                                               UdpRecvEvents& events, std::string& error);
  ~UdpRecvLane();
  UdpRecvLane(const UdpRecvLane&) = delete;
  UdpRecvLane& operator=(const UdpRecvLane&) = delete;

  /// Ends the lane; on_closed(reason) follows on the I/O thread. Idempotent.
  void close(const std::string& reason = "closed by the engine");
  bool closed() const { return stopped_.load(); }
  /// Any thread: `n` more bytes that on_data did not count as consumed
  /// are consumed now; the sender's window slides with the next feedback.
  void consume(size_t n);
  UdpLaneCounters counters() const;
  /// Where the sender must send: the port's address (its port, if it was bound to port 0).
  SocketAddress local_address() const { return port_->local_address(); }
  uint32_t lane_id() const { return lane_id_; }
  const UdpRecvPort& port() const { return *port_; }

 private:
  friend class UdpRecvPort;
  class Sink;
  UdpRecvLane(UdpRecvEvents& events, std::shared_ptr<UdpRecvPort> port, uint32_t lane_id, size_t packet_size,
              const transport::ReceiverConfig& rc);
  static std::unique_ptr<UdpRecvLane> make(std::shared_ptr<UdpRecvPort> port, const UdpLaneConfig& cfg,
                                           size_t packet_size, UdpRecvEvents& events, std::string& error);

  // --- the port's I/O thread ---
  bool has_peer() const { return has_peer_; }
  const SocketAddress& peer() const { return peer_; }
  /// Checks and decrypts in place (a refusal counted by the opener if `count`).
  FrameStatus open(std::span<uint8_t> datagram, bool count = true) { return opener_->open(datagram, count); }
  /// An authentic datagram (header + frames, tag cut off) from `from`.
  void deliver(Time now, std::span<const uint8_t> packet);
  /// Takes `from` as the lane's peer (its first authentic datagram came
  /// from there, or its newest: the peer moved).
  void set_peer(const SocketAddress& from);
  uint64_t highest_accepted() const { return opener_->highest_accepted(); }
  /// The core's feedback, sealed into `tx` for the peer (tagged `owner`);
  /// flushes through `socket` when the batch fills. false if the lane ended.
  bool poll_feedback(Time now, UdpSocket& socket, TxBatch& tx, uint32_t owner);
  Time poll_timeout() const { return receiver_.poll_timeout(); }
  void on_timeout(Time now) { receiver_.on_timeout(now); }
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }
  /// Ends the lane for `reason` (the first reason wins).
  void end(const std::string& reason);
  void publish_counters();
  /// Last call from the port: counters, on_closed, then the handle may go.
  void finish();

  UdpRecvEvents& events_;
  std::shared_ptr<UdpRecvPort> port_;
  uint32_t lane_id_;
  size_t packet_size_;
  std::optional<DatagramSealer> sealer_;
  std::optional<DatagramOpener> opener_;
  transport::LaneReceiver receiver_;
  std::unique_ptr<Sink> sink_;
  bool has_peer_ = false;
  SocketAddress peer_;
  uint64_t protocol_errors_ = 0;
  std::string close_reason_;

  std::mutex mu_;  // stop_reason_, detached_
  std::condition_variable detached_cv_;
  bool detached_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> consumed_later_{0};  // consume(): taken in by the I/O thread
  std::atomic<bool> stopped_{false};
  std::string stop_reason_;
  mutable std::mutex counters_mu_;
  UdpLaneCounters counters_;
};

}  // namespace braid::udp
