// The session simulator: the real sender and receiver session machines
// (core/session), the real scheduler and its policies, over simulated lanes
// in virtual time — quinn's `Pair` and quiche's simulator are the model.
// Each lane is a pair of FIFO pipes: forward (sender -> receiver) at the
// path's rate, carrying messages and piece bytes in order, and back, which
// carries small messages after the one-way delay. A lane's kind decides its
// traits (TCP and stream lanes carry messages and acks; UDP lanes carry
// piece bytes only and ack them in their transport).
//
// Scenario events act on paths: a path can go down (its lane dies — the
// engine notices after `detect`, as keepalive or a failed write would — and
// no connection gets through until it is up again), come up, change rate, or
// its lane's connection can be killed while the path stays (a reset).
//
// Deterministic: no randomness at all; times are exact nanoseconds.
#pragma once

#include <functional>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "core/session/receiver.hpp"
#include "core/session/sender.hpp"
#include "core/units.hpp"

namespace braid::sim {

struct SimPath {
  std::string name;
  session::LaneKind kind = session::LaneKind::tcp;
  Rate rate;
  Duration rtt;
  /// Lanes on this path (streams); the bootstrap lane is on the first path.
  int lanes = 1;
  /// UDP does not get through (a firewall): a UDP lane on it never hears
  /// its peer and gives up after 2 s, as the engine's does.
  bool udp_blocked = false;
  /// A backup path (send --backup IFACE): data only while no other path's lane carries it.
  bool backup = false;
  /// What one lane (one connection) can carry at most, whatever the link:
  /// a TCP window limited by a long RTT or by loss. More lanes help then.
  std::optional<Rate> per_lane = {};
  /// TCP's retransmission timer after an outage: a connection that was open
  /// while the path was down resumes only when its backed-off timer fires —
  /// at rto, 3 rto, 7 rto, ... after the outage began (RFC 6298 5.5: the
  /// timer doubles after each expiry) — while a new connection's SYN goes
  /// out at once. Zero: lanes resume the moment the path is back.
  Duration rto = Duration::zero();
};

struct PathEvent {
  /// gone / back: the path's interface goes away or returns, which the
  /// engine's path manager sees at once (rtnetlink): the sender is given
  /// the new list of paths (Sender::set_paths) and the path is down / up.
  enum class Kind { down, up, rate, kill, gone, back } kind = Kind::down;
  Duration at;
  std::string path;
  Rate rate;  // Kind::rate
  /// Kind::down: the path's lanes fail (for the engine) this long after the
  /// path went away; Duration::infinite(): never (a silently dead lane).
  Duration detect = Duration::seconds(1);
};

/// A phase of `braid probe` in virtual time: a discard transfer carried by
/// the lanes of the named paths (every path if none is named), cancelled
/// `length` after it was offered (Sender::cancel_transfer).
struct ProbePhase {
  std::vector<std::string> paths;
  Duration length = Duration::seconds(3);
};

struct SessionScenario {
  std::vector<SimPath> paths;
  std::vector<PathEvent> events;
  Bytes size = Bytes::mib(64);
  Bytes chunk = Bytes::mib(1);
  std::string policy = "braid";
  std::optional<Rate> rate_limit;
  /// Transfers offered one after another on the one session.
  int transfers = 1;
  /// Non-empty: these probe phases, one after another, instead of `transfers`.
  std::vector<ProbePhase> probe;
  /// The receiver already holds these ranges from an earlier, interrupted
  /// run of the same offer (re-verified): resume.
  std::vector<wire::HeldRange> held;
  /// Stop the run at this time (an interruption) if not done before.
  Duration stop_at = Duration::seconds(3600);
  session::SenderConfig sender;
  session::ReceiverConfig receiver;
};

struct SimTransferResult {
  uint32_t id = 0;
  session::TransferOutcome outcome;
  bool ended = false;
  Time offered_at;
  Time ended_at = Time::never();
  Time all_acked_at = Time::never();  // the sender's last ack
  uint64_t resumed_bytes = 0;
  uint64_t sent_bytes = 0;  // piece bytes put on lanes (duplicates and cancelled ones too)
  std::vector<session::LaneNo> open_lanes;  // the sender's open lanes when the outcome came
  /// Piece bytes of this transfer that reached the receiver, by path, until it ended.
  std::map<std::string, uint64_t> path_bytes;
};

struct SimLaneResult {
  session::LaneNo lane = 0;
  std::string path;
  session::LaneKind kind = session::LaneKind::tcp;
  uint64_t delivered = 0;  // piece bytes that reached the receiver on this lane
  bool open_at_end = false;
  std::string close_reason;
};

struct SessionRunResult {
  std::vector<SimTransferResult> transfers;
  std::vector<SimLaneResult> lanes;
  /// What the receiver kept verified when the run stopped (for a resume run).
  std::vector<wire::HeldRange> receiver_held;
  Time end;
  /// Per millisecond of virtual time, the piece bytes that reached the receiver.
  std::vector<std::pair<Time, uint64_t>> deliveries;
  std::vector<std::string> notes;  // "t=1.234 lane 3 lane_closed: reason"
  /// When and why the receiver's machine ended the session (never: it did not).
  Time receiver_ended_at = Time::never();
  std::string receiver_end_reason;
  /// When the sender's session was closed (Sender::close, the moment every
  /// transfer ended) and when the engine's close() would return: it waits
  /// for each lane that carries messages to be closed by the receiver (the
  /// receiver's end crossing back), at most 500 ms (SenderSession::close).
  Time sender_closed_at = Time::never();
  Time sender_end_at = Time::never();
};

/// Runs the scenario until every transfer ended, the session ended, or stop_at.
SessionRunResult run_session(const SessionScenario& sc);

/// A deterministic stand-in for a piece hash (the simulator has no bytes):
/// the same (offset, length) always gives the same digest on both sides.
wire::Digest sim_piece_digest(uint64_t offset, uint64_t length);
/// A deterministic root over records (order-independent).
wire::Digest sim_root_hash(wire::HashAlgo, std::vector<session::PieceRecord> records);

}  // namespace braid::sim
