// One interface for every kind of lane on the sending side: a TCP lane, a
// byte-stream lane over any connected fd (a Unix socket, a pty or serial
// line, a child process's stdin/stdout) and a braid UDP lane. The session
// (sender_session.cpp) only posts work to a lane and hears its events; the
// kind shows only in the lane's traits (core/session/lane_traits.hpp).
//
// Threads: every call may come from any thread and never blocks on the
// network (work is queued for the lane's own threads). Events come on the
// lane's threads, one lane's events one at a time; they may take the
// session's lock, so the session never calls into a lane's destructor while
// holding it. close() is idempotent and asynchronous; the destructor joins
// the lane's threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/compress/frame_codec.hpp"
#include "core/scheduler.hpp"
#include "core/session/lane_traits.hpp"
#include "core/session/messages.hpp"
#include "core/transport/congestion_controller.hpp"
#include "core/transport/shared_base_rtt.hpp"
#include "core/units.hpp"
#include "engine/lanes/tcp.hpp"
#include "engine/transfer/report.hpp"

namespace braid::transfer {

using session::LaneNo;

/// The running transfer's bytes, shared by every lane's writer (thread-safe).
class PieceSource {
 public:
  virtual ~PieceSource() = default;
  virtual uint32_t transfer_id() const = 0;
  virtual wire::HashAlgo hash() const = 0;
  /// Reads `n` bytes at transfer offset `offset` into `dst`; false and
  /// `error` if the source cannot be read.
  virtual bool read(uint64_t offset, uint64_t n, uint8_t* dst, std::string& error) = 0;
  /// Whether frames of this transfer may cross compressed (`--compress`).
  virtual compress::Mode compress() const { return compress::Mode::off; }
  /// After a failed read at `offset`: the receiver holds these bytes already
  /// and the source let go of their files (a streamed walk's window). The
  /// copy being read is stale (another copy was acked): the lane drops it
  /// as if it were cancelled, and the transfer goes on.
  virtual bool released(uint64_t offset) const {
    (void)offset;
    return false;
  }
};

class DataLaneEvents {
 public:
  virtual ~DataLaneEvents() = default;
  virtual void on_message(LaneNo lane, const session::ToSender& msg) = 0;
  virtual void on_piece_started(LaneNo lane, uint32_t transfer, core::PieceId piece) = 0;
  virtual void on_piece_hashed(LaneNo lane, uint32_t transfer, core::PieceId piece, const wire::Digest& hash) = 0;
  virtual void on_piece_written(LaneNo lane, uint32_t transfer, core::PieceId piece) = 0;
  /// transport_acks lanes: the peer holds every byte of the piece.
  virtual void on_piece_delivered(LaneNo lane, uint32_t transfer, core::PieceId piece) = 0;
  /// The lane's transport measured this delivery rate (file bytes).
  virtual void on_transport_rate(LaneNo lane, Rate rate) = 0;
  /// A piece of `transfer` could not be read from its source.
  virtual void on_read_failed(LaneNo lane, uint32_t transfer, const std::string& reason) = 0;
  /// The lane is gone; the last event. `heard_peer`: anything authentic
  /// ever came back on it.
  virtual void on_closed(LaneNo lane, const std::string& reason, bool heard_peer) = 0;
};

/// What a report shows of a lane, whatever its kind (cumulative).
struct DataLaneCounters {
  uint64_t wire_bytes = 0;       // everything it put on the wire
  uint64_t rejected_frames = 0;  // stale, foreign or forged frames (datagrams) it refused
  uint64_t packed_file_bytes = 0;  // file bytes it sent in compressed frames
  uint64_t packed_wire_bytes = 0;  // what those frames' data took (before sealing)
};

class DataLane {
 public:
  virtual ~DataLane() = default;
  virtual LaneNo id() const = 0;
  virtual session::LaneTraits traits() const = 0;
  /// "local->remote" as a person reads it.
  virtual std::string local() const = 0;
  virtual std::string remote() const = 0;
  /// The interface the lane is bound to; empty: not bound (the kernel routes).
  virtual std::string interface() const { return {}; }
  /// Queued ahead of piece data; lanes that carry messages only.
  virtual void send_message(const session::ToReceiver& msg) = 0;
  virtual void send_piece(std::shared_ptr<PieceSource> source, const core::Assign& a) = 0;
  /// Lanes without messages: the piece's header is on its way, send its bytes.
  virtual void release_piece(uint32_t transfer, core::PieceId piece) { (void)transfer, (void)piece; }
  virtual void cancel_piece(uint32_t transfer, core::PieceId piece) = 0;
  /// The transfer ended: drop everything of it.
  virtual void drop_transfer(uint32_t transfer) = 0;
  /// Caps what the lane puts on the network, headers included (SetLaneRate).
  virtual void set_rate(std::optional<Rate> rate) = 0;
  /// Flushes queued messages (bounded), then ends the lane.
  virtual void close(const std::string& reason) = 0;
  virtual DataLaneCounters counters() const = 0;
  /// The kind's own part of the lane's report (UDP transport, TCP pacing cap).
  virtual void add_to_report(LaneReport& r) const { (void)r; }
  /// The TCP lanes' coupled cap (transport::TcpGroupCap; a scavenger's
  /// under --background), decided for the group of lanes that share this
  /// lane's bottleneck; `queue` is
  /// the group's queueing delay, for the report. nullopt: uncapped.
  /// `restart`: put the kernel's controller back into its start-up.
  virtual void set_delay_cap(std::optional<Rate> cap, Duration queue, bool restart) {
    (void)cap, (void)queue, (void)restart;
  }
  /// Which lanes share a bottleneck (their group for set_delay_cap): the
  /// interface they leave by, else their local address. Empty: none (not TCP).
  virtual std::string bottleneck() const { return {}; }
  /// The lane's state for the `--log` samples.
  virtual nlohmann::json sample() const { return nlohmann::json::object(); }
  /// A TCP lane's kernel state (TCP_INFO) now; false for other kinds.
  virtual bool tcp_info(lanes::TcpKernelInfo& out) const { (void)out; return false; }
  /// What the lane's own controller learned of its path (rate and minimum
  /// RTT), for the next session's fast start (PathMemory); none where a
  /// start cannot be seeded (a kernel's TCP) or nothing was learned.
  virtual std::optional<transport::StartHint> path_figures() const { return std::nullopt; }
};

}  // namespace braid::transfer
