// A braid UDP lane behind the DataLane interface: udp::UdpSendLane (its
// own reliability, pacing and congestion control) plus a feeder thread that
// reads and hashes each piece whole before it goes — the piece's header,
// with the hash, travels ahead over a lane that carries messages (the
// session sends it, then releases the piece here), and the lane keeps the
// bytes for resends. Its transport's ack is the scheduler's ack.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/transfer/data_lane.hpp"
#include "engine/transfer/piece_buffers.hpp"
#include "engine/udp/udp_send_lane.hpp"

namespace braid::transfer {

class UdpDataLane final : public DataLane, private udp::UdpSendEvents {
 public:
  /// Starts the UDP lane (`cfg`) and the feeder; nullptr and `error` if the
  /// lane cannot start. Pieces are read into buffers from `buffers` (the
  /// session's, shared by its lanes; nullptr: a pool of the lane's own).
  static std::unique_ptr<UdpDataLane> start(const udp::UdpLaneConfig& cfg, DataLaneEvents& events,
                                            std::string& error,
                                            std::shared_ptr<PieceBuffers> buffers = nullptr);
  ~UdpDataLane() override;

  LaneNo id() const override { return id_; }
  session::LaneTraits traits() const override;
  std::string local() const override;
  std::string remote() const override { return remote_; }
  std::string interface() const override { return interface_; }
  void send_message(const session::ToReceiver&) override {}  // carries no messages
  void send_piece(std::shared_ptr<PieceSource> source, const core::Assign& a) override;
  void release_piece(uint32_t transfer, core::PieceId piece) override;
  void cancel_piece(uint32_t transfer, core::PieceId piece) override;
  void drop_transfer(uint32_t transfer) override;
  void set_rate(std::optional<Rate> rate) override;
  void close(const std::string& reason) override;
  DataLaneCounters counters() const override;
  void add_to_report(LaneReport& r) const override;
  nlohmann::json sample() const override;
  std::optional<transport::StartHint> path_figures() const override;
  /// Bytes per datagram: --packet-size, or what the path MTU allows.
  size_t packet_size() const { return udp_ ? udp_->packet_size() : 0; }
  /// Test hook support: shut the lane after this many piece bytes were handed to it.
  void kill_after(uint64_t bytes) { kill_after_ = bytes; }

 private:
  UdpDataLane(LaneNo id, std::string remote, DataLaneEvents& events);
  // udp::UdpSendEvents, on the lane's I/O thread.
  void on_piece_started(uint64_t piece) override;
  void on_piece_acked(uint64_t piece) override;
  void on_closed(const std::string& reason) override;
  void feeder_loop();
  void report_rate();

  struct Work {
    std::shared_ptr<PieceSource> source;
    core::Assign a;
  };
  struct Ready {
    std::shared_ptr<uint8_t[]> bytes;
    uint64_t offset = 0, length = 0;
  };

  LaneNo id_;
  std::string remote_;
  std::string interface_;
  DataLaneEvents& events_;
  std::unique_ptr<udp::UdpSendLane> udp_;
  std::shared_ptr<PieceBuffers> buffers_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Work> queue_;
  std::map<uint64_t, Ready> ready_;  // hashed, waiting for release: by lane piece id
  std::map<uint64_t, bool> handed_;  // given to the UDP lane, not acked yet
  bool closing_ = false;
  uint64_t acked_seen_ = 0;  // the transport's acked data bytes at the last rate report
  uint64_t handed_bytes_ = 0;
  uint64_t kill_after_ = UINT64_MAX;
  std::thread feeder_;
};

/// A UDP lane's piece id names the transfer too, so the receiver's lane
/// knows where the bytes go before the piece's header arrives.
inline uint64_t udp_piece_id(uint32_t transfer, core::PieceId piece) {
  return (static_cast<uint64_t>(transfer) << 32) | static_cast<uint32_t>(piece);
}

}  // namespace braid::transfer
