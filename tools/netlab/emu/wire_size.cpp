#include "wire_size.hpp"

#include <cstring>

namespace netlab {
namespace {

// The layout and constants of struct virtio_net_hdr (linux/virtio_net.h,
// which C++ cannot include: a field there is named `class`).
struct VnetHeader {
  std::uint8_t flags;
  std::uint8_t gso_type;
  std::uint16_t hdr_len;
  std::uint16_t gso_size;
  std::uint16_t csum_start;
  std::uint16_t csum_offset;
};
static_assert(sizeof(VnetHeader) == kVnetHeaderBytes);
constexpr std::uint8_t VIRTIO_NET_HDR_GSO_TCPV4 = 1;
constexpr std::uint8_t VIRTIO_NET_HDR_GSO_TCPV6 = 4;
constexpr std::uint8_t VIRTIO_NET_HDR_GSO_UDP_L4 = 5;
constexpr std::uint8_t VIRTIO_NET_HDR_GSO_ECN = 0x80;

std::uint8_t byte_at(std::span<const std::byte> s, std::size_t i) { return std::to_integer<std::uint8_t>(s[i]); }

}  // namespace

IpHeader parse_ip_header(std::span<const std::byte> ip) {
  if (ip.empty()) return {};
  switch (byte_at(ip, 0) >> 4) {
    case 4: {
      const std::size_t header = (byte_at(ip, 0) & 0x0f) * 4u;
      if (ip.size() < 20 || header < 20 || ip.size() < header) return {};
      // A fragment after the first carries no transport header.
      if (((byte_at(ip, 6) & 0x1f) << 8 | byte_at(ip, 7)) != 0) return {};
      return {byte_at(ip, 9), header};
    }
    case 6:
      if (ip.size() < 40) return {};
      // The kernel does not segment packets with extension headers into TSO here.
      return {byte_at(ip, 6), 40};
    default:
      return {};
  }
}

std::size_t transport_header_bytes(std::span<const std::byte> ip, bool udp) {
  const IpHeader h = parse_ip_header(ip);
  if (h.bytes == 0) return 0;
  if (udp) return h.protocol == 17 && ip.size() >= h.bytes + 8 ? h.bytes + 8 : 0;
  if (h.protocol != 6 || ip.size() < h.bytes + 20) return 0;
  const std::size_t tcp_len = (byte_at(ip, h.bytes + 12) >> 4) * 4u;
  if (tcp_len < 20 || ip.size() < h.bytes + tcp_len) return 0;
  return h.bytes + tcp_len;
}

WireSize wire_size(std::span<const std::byte> frame) {
  if (frame.size() < kVnetHeaderBytes) return {static_cast<std::uint32_t>(frame.size()), 1};
  VnetHeader vh;
  std::memcpy(&vh, frame.data(), sizeof vh);
  const auto ip = frame.subspan(kVnetHeaderBytes);
  const auto ip_bytes = static_cast<std::uint32_t>(ip.size());
  const std::uint8_t gso = vh.gso_type & static_cast<std::uint8_t>(~VIRTIO_NET_HDR_GSO_ECN);
  // TUN uses native byte order for the header on little-endian hosts.
  const std::size_t gso_size = vh.gso_size;
  const bool udp = gso == VIRTIO_NET_HDR_GSO_UDP_L4;
  if ((gso != VIRTIO_NET_HDR_GSO_TCPV4 && gso != VIRTIO_NET_HDR_GSO_TCPV6 && !udp) || gso_size == 0)
    return {ip_bytes, 1};
  const std::size_t headers = transport_header_bytes(ip, udp);
  if (headers == 0 || headers >= ip.size()) return {ip_bytes, 1};
  const std::size_t payload = ip.size() - headers;
  const std::size_t segments = (payload + gso_size - 1) / gso_size;
  return {static_cast<std::uint32_t>(payload + segments * headers), static_cast<std::uint32_t>(segments)};
}

}  // namespace netlab
