#include "engine/udp/lane_io.hpp"

#include <cerrno>
#include <cstring>

#include "core/transport/cc_registry.hpp"

namespace braid::udp {

std::string check_config(const UdpLaneConfig& cfg) {
  if (cfg.packet_size != kPathMtuPacketSize && (cfg.packet_size < kMinPacketSize || cfg.packet_size > kMaxPacketSize))
    return "packet size " + std::to_string(cfg.packet_size) + " is outside " + std::to_string(kMinPacketSize) +
           ".." + std::to_string(kMaxPacketSize);
  bool known = false;
  for (const auto& c : transport::controllers()) known = known || c.id == cfg.cc;
  if (!known) return "unknown congestion controller '" + cfg.cc + "'";
  if (cfg.rate_limit && cfg.rate_limit->is_zero()) return "the rate limit must be above zero";
  if (!cfg.local.valid()) return "no local address";
  if (cfg.remote.valid() && cfg.remote.family() != cfg.local.family())
    return "local " + cfg.local.str() + " and remote " + cfg.remote.str() + " are of different families";
  return {};
}

std::string socket_error_reason(int err) {
  switch (err) {
    case ECONNREFUSED: return "the peer's UDP port is closed (ICMP port unreachable)";
    case EMSGSIZE: return "the packet size is above the path MTU (lower --packet-size)";
    case ENETUNREACH:
    case EHOSTUNREACH: return std::string("the peer is unreachable: ") + std::strerror(err);
    default: return std::string("socket error: ") + std::strerror(err);
  }
}

bool make_lane_crypto(const UdpLaneConfig& cfg, transport::PacketKind sends, std::optional<DatagramSealer>& sealer,
                      std::optional<DatagramOpener>& opener, std::string& error) {
  auto keys = security::derive_lane_keys(cfg.lane_secret, cfg.session_id, cfg.lane_id);
  if (!keys) {
    error = keys.error().message;
    return false;
  }
  auto s = DatagramSealer::create(keys.value().for_direction(security::sending_direction(cfg.role)), cfg.session_id);
  const auto receives = sends == transport::PacketKind::data ? transport::PacketKind::feedback : transport::PacketKind::data;
  auto o = DatagramOpener::create(keys.value().for_direction(security::receiving_direction(cfg.role)), cfg.session_id,
                                  OpenerExpect{receives, cfg.lane_id});
  if (!s || !o) {
    error = !s ? s.error().message : o.error().message;
    return false;
  }
  sealer.emplace(std::move(s.value()));
  opener.emplace(std::move(o.value()));
  return true;
}

std::unique_ptr<LaneIo> LaneIo::create(const UdpLaneConfig& cfg, transport::PacketKind sends, std::string& error) {
  if (error = check_config(cfg); !error.empty()) return nullptr;
  auto io = std::make_unique<LaneIo>();
  if (!io->waiter.valid()) {
    error = std::string("cannot create an eventfd: ") + std::strerror(errno);
    return nullptr;
  }
  if (!make_lane_crypto(cfg, sends, io->sealer, io->opener, error)) return nullptr;
  io->socket = UdpSocket::open(cfg.local, cfg.remote.valid() ? &cfg.remote : nullptr, cfg.socket, error);
  if (!io->socket) return nullptr;
  io->socket->set_fault_injection(cfg.fault);
  io->packet_size = cfg.packet_size;
  io->ip_udp_headers = cfg.local.family() == AF_INET ? 28 : 48;
  if (io->packet_size == kPathMtuPacketSize) {
    // A receiving lane (not connected yet) takes whatever size comes.
    const size_t mtu = io->socket->path_mtu();
    const size_t ip_udp = io->ip_udp_headers;
    if (mtu == 0) {
      io->packet_size = cfg.remote.valid() ? kEthernetPacketSize : kMaxPacketSize;
    } else if (mtu < kMinPacketSize + ip_udp) {
      error = "the path MTU to " + cfg.remote.str() + " is " + std::to_string(mtu) + " bytes, below the " +
              std::to_string(kMinPacketSize + ip_udp) + " a UDP lane needs (" + std::to_string(kMinPacketSize) +
              "-byte datagrams)";
      return nullptr;
    } else {
      io->packet_size = std::min(mtu - ip_udp, kMaxPacketSize);
    }
  }
  io->tx = std::make_unique<TxBatch>(kTxBatchSlots, io->packet_size);
  // With GRO one buffer takes a whole coalesced run (up to 64 KiB); without
  // it, one datagram each, so take more of them per call.
  if (io->socket->gro())
    io->rx = std::make_unique<RxBatch>(16, 65536);
  else
    io->rx = std::make_unique<RxBatch>(64, kMaxPacketSize);
  return io;
}

void LaneIo::fill_counters(UdpLaneCounters& c) const {
  using security::FrameStatus;
  c.rejected_forged = opener->count(FrameStatus::forged);
  c.rejected_replayed = opener->count(FrameStatus::replayed);
  c.rejected_too_old = opener->count(FrameStatus::too_old);
  c.rejected_other = opener->rejected() - c.rejected_forged - c.rejected_replayed - c.rejected_too_old;
  c.socket = socket->stats();
  c.gso = socket->gso();
  c.gro = socket->gro();
}

}  // namespace braid::udp
