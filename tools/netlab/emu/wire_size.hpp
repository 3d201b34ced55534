// How much wire a frame read from a TUN device occupies. With IFF_VNET_HDR
// every frame starts with a virtio_net_hdr; when it describes a TCP
// super-packet (GSO), the kernel would have cut it into gso_size segments,
// each with its own IP and TCP headers, and those headers cost link time too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace netlab {

inline constexpr std::size_t kVnetHeaderBytes = 10;  // sizeof(struct virtio_net_hdr)

struct WireSize {
  std::uint32_t bytes = 0;    // sum of the IP lengths of all segments
  std::uint32_t packets = 1;  // number of segments
};

/// An IP packet's transport protocol and header length (0: not IPv4 or IPv6, or too short).
struct IpHeader {
  std::uint8_t protocol = 0;
  std::size_t bytes = 0;
};
IpHeader parse_ip_header(std::span<const std::byte> ip);

/// Length of the IP and TCP (or, with `udp`, UDP) headers at the start of
/// `ip`; 0 if it is not that protocol or its headers are cut short.
std::size_t transport_header_bytes(std::span<const std::byte> ip, bool udp);

/// `frame` is a virtio_net_hdr followed by an IP packet. Frames that cannot
/// be parsed count as one packet of their IP length.
WireSize wire_size(std::span<const std::byte> frame);

}  // namespace netlab
