// The receiving end of one UDP lane: the I/O shell around the pure
// transport::LaneReceiver. Datagrams come in with recvmmsg (+ GRO), are
// opened (tag and replay window) and fed to the core, which hands each DATA
// frame to UdpRecvEvents::on_data (the engine verifies and pwrites) and says
// when to send feedback (acks, MAX_DATA); feedback is sealed and sent on
// the same socket.
//
// If the config has no remote address the socket starts unconnected and
// connects to the source of the first datagram that authenticates — a
// forged or stray datagram cannot claim the lane. From then on the kernel
// filters every other source.
//
// Threads: as UdpSendLane — one I/O thread owns everything; close() and
// counters() from any thread; the destructor closes and joins.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/transport/lane_receiver.hpp"
#include "engine/udp/lane_io.hpp"
#include "engine/udp/udp_lane_types.hpp"

namespace braid::udp {

class UdpRecvLane {
 public:
  static std::unique_ptr<UdpRecvLane> start(const UdpLaneConfig& cfg, UdpRecvEvents& events, std::string& error);
  ~UdpRecvLane();
  UdpRecvLane(const UdpRecvLane&) = delete;
  UdpRecvLane& operator=(const UdpRecvLane&) = delete;

  /// Ends the lane; on_closed(reason) follows on the I/O thread. Idempotent.
  void close(const std::string& reason = "closed by the engine");
  bool closed() const { return stopped_.load(); }
  UdpLaneCounters counters() const;
  /// Where the sender must send (the port, if the config asked for port 0).
  SocketAddress local_address() const { return local_; }

 private:
  class Sink;
  UdpRecvLane(UdpRecvEvents& events, std::unique_ptr<LaneIo> io, const transport::ReceiverConfig& rc);
  void run();
  bool receive(Time now);
  bool send_feedback(Time now);
  void end(const std::string& reason);
  void publish_counters();

  UdpRecvEvents& events_;
  std::unique_ptr<LaneIo> io_;
  transport::LaneReceiver receiver_;
  std::unique_ptr<Sink> sink_;
  SocketAddress local_;
  uint64_t protocol_errors_ = 0;
  std::string close_reason_;

  std::mutex mu_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> stopped_{false};
  std::string stop_reason_;
  mutable std::mutex counters_mu_;
  UdpLaneCounters counters_;
  std::thread thread_;
};

}  // namespace braid::udp
