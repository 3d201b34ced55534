// A lane over any connected byte stream: a TCP connection, a Unix-domain
// socket, one end of a socketpair whose other end is a child process's
// stdin/stdout (`--lane exec:CMD`). It carries the same sealed frames
// (lanes::LaneLink) whatever the stream is.
//
// Threads: a writer (queued messages first, then the queued pieces, each
// read once with pread into the frame buffer, hashed while hot, sealed in
// place and written, 256 KiB a frame; messages may pass between a piece's
// frames) and a reader (opens frames, hands each message to the session).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/compress/frame_codec.hpp"
#include "engine/files/piece_hasher.hpp"
#include "engine/lanes/lane_link.hpp"
#include "engine/transfer/data_lane.hpp"

namespace braid::transfer {

/// Payload bytes of file data per frame: large, so per-frame costs (a syscall,
/// a GCM setup, a header) vanish next to the per-byte work.
constexpr size_t kFrameData = 256 * 1024;

class StreamLane final : public DataLane {
 public:
  struct Options {
    session::LaneTraits traits;
    std::string local, remote;
    /// The stream is a TCP socket: TCP_INFO and pacing caps.
    bool tcp = true;
    /// What else lives as long as the lane (the child process of an exec:
    /// or pty: lane, ended when the lane is).
    std::shared_ptr<void> owner;
    /// The interface it is bound to (SO_BINDTODEVICE), if any.
    std::string interface;
    /// The lanes with the same key share a bottleneck (DataLane::bottleneck).
    std::string bottleneck;
  };
  StreamLane(std::unique_ptr<lanes::LaneLink> link, Options opts, DataLaneEvents& events);
  ~StreamLane() override;

  LaneNo id() const override { return link_->id(); }
  session::LaneTraits traits() const override { return opts_.traits; }
  std::string local() const override { return opts_.local; }
  std::string remote() const override { return opts_.remote; }
  std::string interface() const override { return opts_.interface; }
  void send_message(const session::ToReceiver& msg) override;
  void send_piece(std::shared_ptr<PieceSource> source, const core::Assign& a) override;
  void cancel_piece(uint32_t transfer, core::PieceId piece) override;
  void drop_transfer(uint32_t transfer) override;
  void set_rate(std::optional<Rate> rate) override;
  void close(const std::string& reason) override;
  DataLaneCounters counters() const override;
  void add_to_report(LaneReport& r) const override;
  void set_delay_cap(std::optional<Rate> cap, Duration queue, bool restart) override;
  std::string bottleneck() const override { return opts_.tcp ? opts_.bottleneck : std::string(); }
  nlohmann::json sample() const override;
  bool tcp_info(lanes::TcpKernelInfo& out) const override;
  int fd() const { return link_->fd(); }

 private:
  struct Work {
    std::shared_ptr<PieceSource> source;
    core::Assign a;
  };
  enum class PieceEnd { sent, cancelled, lane_failed, read_failed };
  void writer_loop();
  void reader_loop();
  /// A piece's whole way out, frame by frame: load_frame, then the link
  /// seals the frame in place and sends it; messages pass between frames.
  PieceEnd send_one(const Work& w, std::string& error);
  /// The bytes at [off, off + n) of the piece into frame_, ready to seal:
  /// read straight into the frame's payload (no other copy), hashed while
  /// hot (the piece's hash is of the file's bytes), the piece header in
  /// front (with the hash on the piece's last frame). Returns the payload's
  /// length (header + data), nullopt if the source could not be read.
  /// The one place a step between the read and the seal belongs: the
  /// frame's compression (engine/compress/frame_codec.hpp), after the hash,
  /// in the payload's place; the length returned is then the compressed one.
  std::optional<size_t> load_frame(PieceSource& src, const core::Assign& a, uint64_t off, uint64_t n,
                                   files::PieceHasher& hasher, std::string& error);
  /// Sends queued messages; false if the lane failed.
  bool flush_messages(std::unique_lock<std::mutex>& lock);
  void failed(const std::string& reason);
  /// A send failed: what the peer said before its end (why it closed) is
  /// still in the socket; the reader gets a moment to deliver it first.
  void write_failed();

  std::unique_ptr<lanes::LaneLink> link_;
  Options opts_;
  DataLaneEvents& events_;
  std::vector<uint8_t> frame_;  // the writer's frame buffer
  compress::FrameCompressor compressor_;  // the writer's
  compress::CompressGovernor governor_;   // the writer's: does compressing pay on this lane?
  std::vector<uint8_t> packed_;           // the writer's: a frame's compressed data
  std::atomic<uint64_t> packed_file_bytes_{0}, packed_wire_bytes_{0};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<session::Encoded> messages_;
  std::deque<Work> pieces_;
  std::optional<std::pair<uint32_t, core::PieceId>> current_;
  std::atomic<bool> cancel_current_{false};
  bool closing_ = false;
  bool writer_done_ = false;
  bool reader_done_ = false;
  bool sending_message_ = false;
  std::atomic<bool> closed_reported_{false};
  std::atomic<bool> heard_{false};

  // Rate caps: --rate-limit's share (set_rate) and the group's cap
  // (set_delay_cap); the socket gets the lower.
  mutable std::mutex pace_mu_;
  std::optional<Rate> rate_cap_;
  std::optional<Rate> delay_cap_;  // the coupled default cap (set_delay_cap)
  /// Puts `want` on the socket (SO_MAX_PACING_RATE) unless it is there already.
  void apply_cap_locked(std::optional<Rate> want);
  std::optional<Rate> on_socket_;
  bool on_socket_set_ = false;
  int lowat_on_socket_ = lanes::kNotSentLowat;  // TCP_NOTSENT_LOWAT, set with the cap
  struct PacingState {
    bool active = false;
    double cap = -1, queue_ms = 0, srtt_ms = 0, min_rtt_ms = 0;
    uint64_t acked = 0, kernel_pacing = 0, delivery_rate = 0;
    uint32_t retrans = 0, cwnd = 0, restarts = 0;
  } pacing_state_;
  /// The report's view after a cap was put: what is on the socket, the
  /// queue the cap steers by, and the kernel's state (null: not read).
  void record_pacing_locked(Duration queue, const lanes::TcpKernelInfo* k, bool restarted);

  std::thread writer_, reader_;
};

}  // namespace braid::transfer
