// DNS messages as Multicast DNS carries them (RFC 1035 section 4, RFC 6762):
// pure encode/decode, no I/O.
//
// decode() takes any bytes a host on the link sent and either returns the
// message or an error; it never reads past the buffer and bounds everything
// a peer controls:
//   - the packet: at most kMaxPacket bytes (RFC 6762 section 17: 9000);
//   - records: at most kMaxRecords across the four sections;
//   - names: at most 255 bytes in wire form, labels at most 63 (RFC 1035 2.3.4);
//   - compression pointers (RFC 1035 4.1.4, which mDNS uses too, RFC 6762
//     section 18.14) must point strictly backwards from the label that holds
//     them, so they cannot loop, and at most kMaxPointerJumps are followed.
// Record types braid reads (A, AAAA, PTR, SRV, TXT) are parsed; others are
// kept as raw bytes. encode() writes names uncompressed: braid's own
// messages are a few hundred bytes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace braid::discovery {

inline constexpr size_t kMaxPacket = 9000;
inline constexpr size_t kMaxRecords = 256;
inline constexpr size_t kMaxNameBytes = 255;
inline constexpr size_t kMaxLabel = 63;
inline constexpr int kMaxPointerJumps = 32;
/// TXT: at most this many strings per record (each at most 255 bytes by its length byte).
inline constexpr size_t kMaxTxtStrings = 64;

enum class RrType : uint16_t { a = 1, ptr = 12, txt = 16, aaaa = 28, srv = 33, nsec = 47, any = 255 };
inline constexpr uint16_t kClassIn = 1;
/// The top bit of a question's class asks for a unicast response (QU, RFC 6762 5.4);
/// of a record's class, it is the cache-flush bit (RFC 6762 10.2).
inline constexpr uint16_t kClassTopBit = 0x8000;

/// A domain name as labels, e.g. {"_braid", "_tcp", "local"}. Labels are
/// raw bytes (an instance name may hold spaces, dots, UTF-8). Compared
/// case-insensitively for ASCII, as DNS does (RFC 1035 2.3.3).
struct DnsName {
  std::vector<std::string> labels;

  static DnsName of(std::initializer_list<std::string_view> ls);
  /// "a.b.c" split at dots (no escapes: for names braid builds itself).
  static DnsName parse_dotted(std::string_view dotted);
  /// Dotted form for messages; dots inside a label are shown as "\.".
  std::string str() const;
  size_t wire_size() const;  // bytes in uncompressed wire form, final zero included
  bool operator==(const DnsName& o) const;
  /// This name ends with `suffix` (labels compared as ==).
  bool ends_with(const DnsName& suffix) const;
};

struct SrvData {
  uint16_t priority = 0;
  uint16_t weight = 0;
  uint16_t port = 0;
  DnsName target;
  bool operator==(const SrvData&) const = default;
};

struct Question {
  DnsName name;
  uint16_t type = 0;
  bool unicast_response = false;  // QU bit
  uint16_t rclass = kClassIn;
};

struct Record {
  DnsName name;
  uint16_t type = 0;
  uint16_t rclass = kClassIn;  // without the cache-flush bit
  bool cache_flush = false;
  uint32_t ttl = 0;  // seconds
  // A: 4 bytes, AAAA: 16 bytes, PTR: a name, SRV, TXT: its strings, anything else: raw rdata.
  std::variant<std::array<uint8_t, 4>, std::array<uint8_t, 16>, DnsName, SrvData, std::vector<std::string>,
               std::vector<uint8_t>>
      data;

  /// Same name, type, class and data (the TTL aside): the same record (RFC 6762 10.2).
  bool same_rr(const Record& o) const;
};

struct Message {
  uint16_t id = 0;
  uint16_t flags = 0;  // QR is 0x8000, AA 0x0400
  std::vector<Question> questions;
  std::vector<Record> answers;
  std::vector<Record> authorities;
  std::vector<Record> additionals;

  bool is_response() const { return (flags & 0x8000) != 0; }
};

enum class DecodeError {
  too_short,
  too_long,
  too_many_records,
  bad_name,         // label or name too long, a reserved label type, a name running past the end
  pointer_loop,     // a compression pointer not strictly backwards, or too many of them
  bad_record,       // rdata length disagrees with its type, or runs past the end
};
std::string_view decode_error_name(DecodeError e);

struct Decoded {
  std::optional<Message> message;
  DecodeError error = DecodeError::too_short;  // when !message
};

Decoded decode(std::span<const uint8_t> packet);
/// Uncompressed wire form. Labels longer than 63 bytes are cut to 63, as a
/// name built by braid never needs more.
std::vector<uint8_t> encode(const Message& m);

}  // namespace braid::discovery
