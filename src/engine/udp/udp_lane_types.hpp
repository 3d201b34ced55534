// What both ends of a UDP lane share: its settings, its counters (the
// `--json` report's per-lane fields), and how it tells the engine about
// pieces and its end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/transport/congestion_controller.hpp"
#include "core/units.hpp"
#include "engine/security/lane_keys.h"
#include "engine/udp/socket_address.hpp"
#include "engine/udp/udp_socket.hpp"

namespace braid::udp {

/// Packet size bounds (MISSION §2: packet size is a setting): the whole UDP
/// payload, header + frames + AEAD tag.
inline constexpr size_t kMinPacketSize = 1200;
inline constexpr size_t kMaxPacketSize = 9000;
/// 1500-byte Ethernet MTU − 20 (IPv4) − 8 (UDP).
inline constexpr size_t kEthernetPacketSize = 1472;
/// `packet_size` 0: the largest datagram the path carries unfragmented, as
/// the kernel knows it for the connected socket (IP_MTU: the route's MTU,
/// lowered by ICMP "fragmentation needed" since the socket forbids
/// fragments), within 1200..9000. The default.
inline constexpr size_t kPathMtuPacketSize = 0;
inline constexpr size_t kDefaultPacketSize = kPathMtuPacketSize;

struct UdpLaneConfig {
  uint32_t lane_id = 0;
  uint64_t session_id = 0;            // from the TLS session (security::Session)
  security::LaneSecret lane_secret;   // Session::lane_secret(); keys via derive_lane_keys
  /// Our side of the TLS session: the client (braid send) seals with the
  /// client→server keys, the server (braid recv) with server→client.
  security::Role role = security::Role::client;
  SocketAddress local;                // port 0: any
  /// The peer. A receiving lane may leave it unset: it then connects to the
  /// source of the first datagram that authenticates.
  SocketAddress remote;
  size_t packet_size = kDefaultPacketSize;  // --packet-size, 1200..9000, or 0: the path MTU's
  std::string cc = "delay";           // --cc NAME; "background" for --background
  std::optional<Rate> rate_limit;     // --rate-limit: caps what the lane puts on the network, headers in
  /// The window covers at least pacing rate × this (lane_limits_controller.hpp).
  Duration io_reaction = Duration::millis(2);
  /// The pacer's burst allowance in time at the current rate (the core's
  /// PacerConfig::burst_time, 250 µs in the simulator). A real thread can
  /// wake late — by a millisecond on a busy machine — and a bucket that
  /// holds only 250 µs of credit then loses rate for good; 1 ms is what
  /// Linux itself allows a paced TCP flow per burst (sk_pacing_shift = 10,
  /// ~1 ms of data per TSO/GSO burst). Bursts stay 1 ms at the lane's own
  /// rate, so they add at most ~1 ms of queue at a bottleneck of that rate.
  Duration pacer_burst = Duration::millis(1);
  /// Pacing credit a sending lane waits for before it wakes
  /// (PacerConfig::wake_time): half the burst allowance. Measured on this
  /// VM, context switches (each wake-up) were half of braid's CPU time at
  /// 200 Mbit/s; 0.5 ms bursts add at most 0.5 ms of queue at a bottleneck
  /// of the lane's own rate.
  Duration pacer_wake = Duration::micros(500);
  /// A receiving lane acks every this many packets (and at once on a gap,
  /// and within max_ack_delay): RFC 9000's 2 costs both ends a datagram per
  /// two; 8 still gives the controller an RTT sample every ~0.5 ms at
  /// 200 Mbit/s (QUIC's ack-frequency extension makes the same trade).
  uint32_t ack_every = 8;
  /// A sending lane with data in flight that hears nothing authentic from
  /// the peer for this long closes ("peer silent"); the transport's own
  /// probe timer keeps probing with backoff until then.
  Duration idle_timeout = Duration::seconds(10);
  /// The same for a lane that has never heard its peer at all: UDP may be
  /// blocked on the path (a firewall), and the sender can put a TCP lane
  /// there instead (UdpSendLane::heard_peer).
  Duration first_contact_timeout = Duration::seconds(2);
  uint64_t cc_seed = 1;               // randomised controller phases stay reproducible
  /// The path's figures from a known peer's last transfer: a fast start (PathMemory).
  std::optional<transport::StartHint> start;
  /// Shared by the lanes of one path: its base RTT (transport::SharedBaseRtt).
  std::shared_ptr<transport::SharedBaseRtt> shared_base;
  /// Shared by the same lanes: one startup for the path (transport::SharedStartup).
  std::shared_ptr<transport::SharedStartup> shared_startup;
  SocketOptions socket;
  FaultInjection fault;               // tests only
};

/// A snapshot of one lane's counters; taken any time from any thread.
struct UdpLaneCounters {
  // Sending end (LaneSender): the --json fields of issue 5.
  uint64_t packets_sent = 0;
  uint64_t packets_lost = 0;
  uint64_t packets_retransmitted = 0;  // packets that carried resent data
  uint64_t pto_count = 0;
  uint64_t wire_bytes_sent = 0;        // header + frames + tag
  uint64_t data_bytes_sent = 0;        // file bytes, first transmission
  uint64_t data_bytes_retransmitted = 0;
  uint64_t data_bytes_acked = 0;
  double srtt_ms = 0;
  double min_rtt_ms = 0;
  double rate_bytes_per_sec = 0;       // the controller's pacing rate (after --rate-limit)
  uint64_t cwnd_bytes = 0;
  double bandwidth_bytes_per_sec = 0;  // the controller's bottleneck estimate
  uint64_t bytes_in_flight = 0;
  uint64_t queued_bytes = 0;           // handed to the lane, not sent yet
  uint64_t pieces_acked = 0;
  // Receiving end (LaneReceiver).
  uint64_t packets_received = 0;
  uint64_t duplicate_packets = 0;
  uint64_t data_bytes_received = 0;    // including duplicates
  uint64_t feedback_packets_sent = 0;
  // Either end: datagrams the opener refused, and why.
  uint64_t rejected_forged = 0;        // tag failed: corrupted or forged
  uint64_t rejected_replayed = 0;      // packet number seen already
  uint64_t rejected_too_old = 0;       // behind the replay window
  uint64_t rejected_other = 0;         // bad header, foreign lane, reflected
  uint64_t protocol_errors = 0;        // authentic but malformed (a peer bug)
  SocketStats socket;
  double io_thread_cpu_seconds = 0;    // CPU time of the lane's I/O thread (user + system)
  bool gso = false;
  bool gro = false;
  uint64_t rejected_total() const { return rejected_forged + rejected_replayed + rejected_too_old + rejected_other; }
};

/// Events of a sending lane. Called on the lane's I/O thread, one at a time;
/// they must not block for long and must not destroy the lane.
class UdpSendEvents {
 public:
  virtual ~UdpSendEvents() = default;
  /// The first datagram of the piece left (the scheduler's on_send_started).
  virtual void on_piece_started(uint64_t piece) { (void)piece; }
  /// Every byte of the piece reached the peer's lane (transport-level
  /// delivery; the engine's own hash check comes on top).
  virtual void on_piece_acked(uint64_t piece) = 0;
  /// The lane ended; called exactly once, last. Pieces not acked by then
  /// were not delivered by this lane.
  virtual void on_closed(const std::string& reason) = 0;
};

/// Events of a receiving lane (I/O thread, one at a time).
class UdpRecvEvents {
 public:
  virtual ~UdpRecvEvents() = default;
  /// `bytes` of piece `piece` at `offset` (the offset the sender gave for
  /// the piece, plus the position within it). A range may come twice (a
  /// resend crossing a late original): writes must be idempotent. The bytes
  /// are valid during the call only. Returns how many of them count as
  /// consumed for flow control now; the engine hands in the rest later
  /// (UdpRecvLane::consume) — its way to slow the sender when it cannot
  /// keep up with writing.
  virtual size_t on_data(uint64_t piece, uint64_t offset, std::span<const uint8_t> bytes) = 0;
  virtual void on_closed(const std::string& reason) = 0;
};

}  // namespace braid::udp
