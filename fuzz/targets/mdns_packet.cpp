// An mDNS packet from anyone on the link (core/discovery): decoded by
// braid's responder (`braid recv`) and browser (`braid send CODE`,
// `braid peers`). Input: the UDP payload. Properties:
//   - decode() returns a message or an error, reading nothing outside the
//     input, within its bounds (records, names, pointers: dns_message.hpp);
//   - a decoded message re-encodes to bytes that decode again, and encoding
//     that is a fixed point (same sections, same records, same TTLs);
//   - a Responder (announced) and a Browser fed the packet survive it; the
//     browser's cache and the responder's queue stay within their bounds,
//     and every browsed instance is complete (SRV, TXT, an address).
#include <algorithm>

#include "core/discovery/dns_message.hpp"
#include "core/discovery/mdns.hpp"
#include "fuzz_support.hpp"

using namespace braid;
using namespace braid::discovery;

namespace {

bool same_records(const std::vector<Record>& a, const std::vector<Record>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same_rr(b[i]) || a[i].ttl != b[i].ttl || a[i].cache_flush != b[i].cache_flush) return false;
  return true;
}

Responder announced_responder(Time& now) {
  ResponderConfig c;
  c.instance = "fuzz";
  c.host = DnsName::of({"braid-00000000", "local"});
  c.port = 7878;
  c.txt = {"v=1", "n=4711", "fp=SHA256:x"};
  c.interfaces = {{1, {IpAddress::v4({10, 0, 0, 1})}}};
  Responder r(c, now);
  for (int i = 0; i < 20 && r.state() != Responder::State::announced; ++i) {
    now = r.poll_timeout();
    r.handle_timeout(now);
    while (r.poll_transmit()) {
    }
  }
  now = now + Duration::seconds(2);
  r.handle_timeout(now);
  while (r.poll_transmit()) {
  }
  return r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto in = fuzz::bytes_of(data, size);
  const Decoded d = decode(in);
  if (d.message) {
    const auto once = encode(*d.message);
    if (once.size() <= kMaxPacket) {  // uncompressed, a packet may grow past the limit
      const Decoded d2 = decode(once);
      FUZZ_CHECK(d2.message.has_value());
      const auto twice = encode(*d2.message);
      const Decoded d3 = decode(twice);
      FUZZ_CHECK(d3.message.has_value());
      FUZZ_CHECK(twice == encode(*d3.message));
      FUZZ_CHECK(d2.message->questions.size() == d.message->questions.size());
      FUZZ_CHECK(same_records(d2.message->answers, d3.message->answers));
      FUZZ_CHECK(d2.message->answers.size() == d.message->answers.size());
      FUZZ_CHECK(d2.message->additionals.size() == d.message->additionals.size());
    }
  }

  Time now = Time::zero();
  Responder r = announced_responder(now);
  for (uint16_t port : {kMdnsPort, uint16_t{40000}}) {
    r.handle_packet(in, {IpAddress::v4({10, 0, 0, 2}), port}, {1, false}, now);
    size_t sent = 0;
    r.handle_timeout(now + Duration::seconds(1));
    while (auto t = r.poll_transmit()) {
      FUZZ_CHECK(decode(t->bytes).message.has_value());  // what braid sends, braid can read
      ++sent;
    }
    FUZZ_CHECK(sent <= kMaxPendingTransmits);
  }

  Browser b(BrowserConfig{braid_service_type(), {{1, false}}, 1}, Time::zero());
  b.handle_packet(in, {IpAddress::v4({10, 0, 0, 2}), kMdnsPort}, {1, false}, Time::zero());
  b.handle_packet(in, {IpAddress::v4({10, 0, 0, 2}), kMdnsPort}, {1, false}, Time::zero() + Duration::seconds(2));
  FUZZ_CHECK(b.cached_records() <= kMaxCachedRecords);
  for (const auto& s : b.instances(Time::zero() + Duration::seconds(2))) {
    FUZZ_CHECK(!s.addresses.empty());
    FUZZ_CHECK(s.instance.size() <= kMaxLabel);
  }
  b.handle_timeout(Time::zero() + Duration::seconds(1));
  while (auto t = b.poll_transmit()) FUZZ_CHECK(decode(t->bytes).message.has_value());
  return 0;
}
