// One lane's byte stream, framed and sealed: every frame is AES-256-GCM with
// the lane's own keys (engine/security: derive_lane_keys, FrameSealer,
// FrameOpener in strict order), bound to the session and lane by its header.
//
// Threads: any number of threads may send (a mutex keeps each frame whole on
// the wire); exactly one thread reads. shutdown() wakes both sides.
//
// Reading sorts what arrives into:
//   frame     authenticated and in order: use it;
//   rejected  stale or foreign (older session, other lane, replayed): the
//             frame is dropped and counted, the lane goes on;
//   broken    forged/corrupted or the framing is gone: the lane must close;
//   closed    the connection ended (EOF or a socket error).
//
// Faults come from outside: tests break lanes through a proxy
// (tests/integration/fault_proxy.py) or, in-process, through FrameFaults.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "engine/security/frame_crypto.h"
#include "engine/security/lane_keys.h"
#include "engine/security/unique_fd.h"
#include "core/wire/messages.hpp"

namespace braid::lanes {

enum class ReadStatus { frame, rejected, broken, closed };

/// Where the body of the next frame may be decrypted straight to, saving a
/// copy: for a frame of `type` whose payload is at least `skip` bytes, the
/// payload's first `skip` bytes stay in the lane's buffer and the rest lands
/// in `tail` (if it fits; otherwise the frame opens in the lane's buffer).
struct Landing {
  wire::FrameType type{};
  size_t skip = 0;
  std::span<uint8_t> tail;
};

struct Incoming {
  ReadStatus status = ReadStatus::closed;
  wire::FrameType type{};
  std::span<const uint8_t> payload;  // valid until the next read()
  /// A frame that took the Landing: `payload` holds only its first `skip`
  /// bytes, the rest is here (inside Landing::tail). Empty otherwise.
  std::span<const uint8_t> landed;
  security::FrameStatus frame_status = security::FrameStatus::ok;
  std::string reason;  // for rejected/broken/closed
};

/// A fault a test injects into a lane's outgoing data frames, in process
/// (never set in production): a source that changed after it was hashed.
class FrameFaults {
 public:
  virtual ~FrameFaults() = default;
  /// Before the lane's `frame`-th data frame (from 0) is sealed; `payload`
  /// (piece header and data) was hashed already and may be changed.
  virtual void before_seal(uint32_t lane, uint64_t frame, std::span<uint8_t> payload) = 0;
};

class LaneLink {
 public:
  /// Takes over `fd` (a connected socket, already past any TLS handshake).
  static std::unique_ptr<LaneLink> create(security::UniqueFd fd, uint64_t session_id, uint32_t lane_id,
                                          const security::LaneSecret& secret, security::Role role, std::string& error);
  ~LaneLink();

  uint32_t id() const { return lane_id_; }
  int fd() const { return fd_.get(); }

  /// Seals and sends one control message. false if the lane is gone.
  bool send(wire::FrameType type, std::span<const uint8_t> payload);
  template <class M>
  bool send_message(const M& m) {
    auto p = wire::encode_message(m);
    return send(M::kType, p);
  }
  /// The data path without copies: `frame` is laid out as
  /// [kFrameHeaderSize][payload_len bytes of payload][kFrameTagSize]; the
  /// payload is sealed where it is and the whole frame sent.
  bool send_in_place(wire::FrameType type, std::span<uint8_t> frame, size_t payload_len);

  Incoming read(const Landing* landing = nullptr);
  /// In-process tests only (see FrameFaults).
  void set_faults(std::shared_ptr<FrameFaults> faults) { faults_ = std::move(faults); }

  /// Ends the connection both ways (wakes a blocked reader and writer).
  void shutdown();
  /// No more sends (a FIN); reads go on until the peer's end.
  void shutdown_write();
  bool is_shut_down() const { return shut_.load(); }

  uint64_t bytes_sent() const { return bytes_sent_.load(std::memory_order_relaxed); }
  uint64_t bytes_received() const { return bytes_received_.load(std::memory_order_relaxed); }
  /// Frames the opener rejected, by status (read by reports after the reader ended).
  uint64_t rejected(security::FrameStatus s) const { return rejected_[static_cast<size_t>(s)].load(); }
  uint64_t rejected_total() const;
  std::string send_error() const;

 private:
  LaneLink(security::UniqueFd fd, uint32_t lane_id, uint64_t session_id, security::FrameSealer sealer,
           security::FrameOpener opener, security::Role role);
  bool write_frame(std::span<const uint8_t> bytes);
  /// Whole-buffer I/O. A pty or a pipe has no shutdown(): on those the lane
  /// is non-blocking and polls, so that shutdown() still wakes both sides.
  bool send_bytes(const uint8_t* data, size_t len, int& err);
  bool recv_bytes(uint8_t* data, size_t len, int& err);

  security::UniqueFd fd_;
  uint32_t lane_id_;
  uint64_t session_id_;
  security::Role role_;
  std::mutex send_mu_;
  security::FrameSealer sealer_;
  security::FrameOpener opener_;
  std::vector<uint8_t> rbuf_;
  std::atomic<bool> shut_{false};
  bool socket_ = true;
  bool tcp_ = false;  // a TCP socket: its reads send held-back ACKs at once (recv_all)
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> bytes_received_{0};
  std::array<std::atomic<uint64_t>, security::kFrameStatusCount> rejected_{};
  std::string send_error_;
  uint64_t data_frames_sent_ = 0;
  std::shared_ptr<FrameFaults> faults_;
};

}  // namespace braid::lanes
