// The parts both ends of a UDP lane run on: the socket with its send and
// receive batches, the sealer for what this end sends, the opener for what
// the peer sends, the clock and the waiter. Built once per lane; nothing
// here allocates per datagram.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/udp/datagram_crypto.hpp"
#include "engine/udp/io_waiter.hpp"
#include "engine/udp/udp_lane_types.hpp"
#include "engine/udp/udp_socket.hpp"

namespace braid::udp {

/// Datagrams per send batch: one pacing quantum at multi-Gbit/s rates
/// (250 µs at 2.5 Gbit/s ≈ 78 kB) fits in 64 × 1472 bytes.
inline constexpr size_t kTxBatchSlots = 64;

struct LaneIo {
  std::unique_ptr<UdpSocket> socket;
  std::optional<DatagramSealer> sealer;
  std::optional<DatagramOpener> opener;
  std::unique_ptr<TxBatch> tx;
  std::unique_ptr<RxBatch> rx;
  IoWaiter waiter;
  LaneClock clock;
  /// The datagram size in use: the configured one, or the path MTU's.
  size_t packet_size = 0;
  /// What the network adds to each datagram: the IP and UDP headers.
  size_t ip_udp_headers = 28;

  /// `sends` is the packet kind this end sends (data for a sending lane);
  /// it opens the other kind. Empty with `error` set on failure.
  static std::unique_ptr<LaneIo> create(const UdpLaneConfig& cfg, transport::PacketKind sends, std::string& error);

  /// Adds the opener's and the socket's counts to `c`.
  void fill_counters(UdpLaneCounters& c) const;
};

/// The sealer for what this end sends (`sends`) and the opener for the other
/// kind, with the lane's keys (derive_lane_keys of its secret, session and
/// lane id, per direction). false with `error` set on failure.
bool make_lane_crypto(const UdpLaneConfig& cfg, transport::PacketKind sends, std::optional<DatagramSealer>& sealer,
                      std::optional<DatagramOpener>& opener, std::string& error);

/// "packet size 9000 is outside 1200..9000" style check; empty if fine.
std::string check_config(const UdpLaneConfig& cfg);

/// Why a socket error ends the lane, in words for people.
std::string socket_error_reason(int err);

}  // namespace braid::udp
