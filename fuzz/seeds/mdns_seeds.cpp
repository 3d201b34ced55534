// Seeds for fuzz_mdns_packet: what braid's responder and browser really
// send (probe, announcement, answer, query with known answers, goodbye),
// a compressed response as other stacks send it, and hostile shapes.
#include "seeds/mdns_seeds.hpp"

#include <fstream>

#include "core/discovery/dns_message.hpp"
#include "core/discovery/mdns.hpp"

namespace braid::fuzz {
namespace {

using namespace braid::discovery;

void put(const std::filesystem::path& out, const std::string& name, const std::vector<uint8_t>& bytes) {
  const auto dir = out / "mdns_packet";
  std::filesystem::create_directories(dir);
  std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

void mdns_seeds(const std::filesystem::path& out) {
  ResponderConfig c;
  c.instance = "seed host";
  c.host = DnsName::of({"braid-1a2b3c4d", "local"});
  c.port = 7878;
  c.txt = {"v=1", "n=4711", "fp=SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"};
  c.interfaces = {{1, {IpAddress::v4({10, 0, 0, 1}), IpAddress::v6_of({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})}}};
  Responder r(c, Time::zero());
  Time now = Time::zero();
  int probe = 0, announce = 0;
  for (int i = 0; i < 20 && announce < 2; ++i) {
    now = r.poll_timeout();
    r.handle_timeout(now);
    while (auto t = r.poll_transmit()) {
      if (t->link.v6) continue;
      const auto m = decode(t->bytes);
      if (m.message && !m.message->is_response() && probe++ == 0) put(out, "probe", t->bytes);
      if (m.message && m.message->is_response() && announce++ == 0) put(out, "announcement", t->bytes);
    }
  }
  Message q;
  q.questions.push_back({braid_service_type(), static_cast<uint16_t>(RrType::ptr), false, kClassIn});
  put(out, "ptr_query", encode(q));
  now = now + Duration::seconds(2);
  r.handle_packet(encode(q), {IpAddress::v4({10, 0, 0, 2}), kMdnsPort}, {1, false}, now);
  r.handle_timeout(now + Duration::seconds(1));
  while (auto t = r.poll_transmit())
    if (!t->link.v6) put(out, "answer", t->bytes);
  Record known;
  known.name = braid_service_type();
  known.type = static_cast<uint16_t>(RrType::ptr);
  known.ttl = 4000;
  known.data = DnsName::of({"seed host", "_braid", "_tcp", "local"});
  q.answers.push_back(known);
  put(out, "query_known_answer", encode(q));
  r.shutdown(now + Duration::seconds(2));
  while (auto t = r.poll_transmit())
    if (!t->link.v6) put(out, "goodbye", t->bytes);
  // A response with compressed names (as avahi and Apple's stack send them):
  // PTR _braid._tcp.local -> x._braid._tcp.local, SRV x -> h.local, A h.
  put(out, "compressed", {0, 0, 0x84, 0, 0, 0, 0, 3, 0, 0, 0, 0,
                          6, '_', 'b', 'r', 'a', 'i', 'd', 4, '_', 't', 'c', 'p', 5, 'l', 'o', 'c', 'a', 'l', 0,
                          0, 12, 0, 1, 0, 0, 0x11, 0x94, 0, 4, 1, 'x', 0xC0, 12,
                          0xC0, 41, 0, 33, 0x80, 1, 0, 0, 0, 120, 0, 10, 0, 0, 0, 0, 0x1E, 0xC6, 1, 'h', 0xC0, 24,
                          0xC0, 63, 0, 1, 0x80, 1, 0, 0, 0, 120, 0, 4, 10, 0, 0, 1});
  put(out, "pointer_loop", {0, 0, 0x84, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4});
  put(out, "counts_lie", {0, 0, 0x84, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  put(out, "header_only", {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
}

}  // namespace braid::fuzz
