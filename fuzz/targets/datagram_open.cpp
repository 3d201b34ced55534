// Opening UDP lane datagrams (udp::DatagramOpener) with a fixed key: what a
// UDP lane does with every datagram that reaches its port. The first input
// byte picks a mode:
//   0  raw: the rest is a datagram off the wire, opened in place. Only an
//      authentic one may open: whenever one does, sealing its plaintext
//      again gives exactly the same bytes.
//   1  tamper: a packet (header fields and body from the input) is sealed,
//      changed as the input says, and opened. Unchanged, it opens to the same
//      plaintext — or is refused for the reason its header gives (our own
//      kind: reflected; another lane); changed, it never opens.
//   2  sequence: datagrams with packet numbers the input picks (repeats,
//      far behind, near 2^64, some corrupted) arrive in turn; each verdict
//      matches the replay window's contract (once, within 1024 of the
//      highest accepted; a forgery changes nothing), and uncounted
//      refusals (count = false) leave the statistics alone.
#include <fuzzer/FuzzedDataProvider.h>

#include <numeric>
#include <set>
#include <vector>

#include "engine/udp/datagram_crypto.hpp"
#include "fixed_keys.hpp"

using namespace braid;
using braid::fuzz::kLaneId;
using braid::fuzz::kSessionId;
using security::FrameStatus;
using transport::kAeadTagSize;
using transport::kHeaderSize;

namespace {

// Data packets travel sender (TLS client) → receiver.
const security::DirectionKeys& keys() {
  return fuzz::fixed_lane_keys().for_direction(security::Direction::client_to_server);
}

udp::DatagramOpener opener() {
  auto r = udp::DatagramOpener::create(keys(), kSessionId, {transport::PacketKind::data, kLaneId});
  FUZZ_CHECK(r.ok());
  return std::move(r.value());
}

// header ‖ body, sealed: the datagram a real sender would put on the wire.
// One sealer for the whole run: it keeps no state but a byte count (its
// 1 TiB key limit is far beyond any run), and creating one per datagram
// would cost more than the opening under test.
std::vector<uint8_t> seal(std::span<const uint8_t> plain) {
  static udp::DatagramSealer sealer = [] {
    auto s = udp::DatagramSealer::create(keys(), kSessionId);
    FUZZ_CHECK(s.ok());
    return std::move(s.value());
  }();
  std::vector<uint8_t> d(plain.begin(), plain.end());
  d.resize(plain.size() + kAeadTagSize);
  FUZZ_CHECK(sealer.seal(d, plain.size()) == FrameStatus::ok);
  return d;
}

std::vector<uint8_t> packet(uint8_t first, uint32_t lane, uint64_t pn, std::span<const uint8_t> body) {
  std::vector<uint8_t> p{first};
  for (int i = 3; i >= 0; --i) p.push_back(static_cast<uint8_t>(lane >> (8 * i)));
  for (int i = 7; i >= 0; --i) p.push_back(static_cast<uint8_t>(pn >> (8 * i)));
  p.insert(p.end(), body.begin(), body.end());
  return p;
}

uint64_t pn_of(std::span<const uint8_t> d) {
  uint64_t pn = 0;
  for (size_t i = 5; i < 13; ++i) pn = (pn << 8) | d[i];
  return pn;
}

void raw(std::span<const uint8_t> datagram) {
  std::vector<uint8_t> buf(datagram.begin(), datagram.end());
  auto o = opener();
  if (o.open(buf) != FrameStatus::ok) {
    FUZZ_CHECK(o.rejected() == 1);
    return;
  }
  FUZZ_CHECK(o.highest_accepted() == pn_of(datagram));
  const auto again = seal(std::span(buf).first(buf.size() - kAeadTagSize));
  FUZZ_CHECK(std::equal(again.begin(), again.end(), datagram.begin(), datagram.end()));
}

void tamper(FuzzedDataProvider& in) {
  const uint8_t kind = in.ConsumeIntegralInRange<uint8_t>(0, 3);  // 0 data, 1 feedback, 2-3: not a braid kind
  const bool other_lane = in.ConsumeIntegralInRange(0, 7) == 0;
  const uint64_t pn = in.ConsumeIntegral<uint64_t>();
  const int edits = in.ConsumeIntegralInRange(0, 3);
  std::vector<std::pair<size_t, uint8_t>> xors;
  for (int i = 0; i < edits; ++i) xors.push_back({in.ConsumeIntegral<uint16_t>(), in.ConsumeIntegral<uint8_t>()});
  const int resize = in.ConsumeIntegralInRange(-2, 2);
  const std::vector<uint8_t> body = in.ConsumeRemainingBytes<uint8_t>();

  const uint8_t first = kind < 2 ? static_cast<uint8_t>(0x40 | kind) : static_cast<uint8_t>(kind == 2 ? 0x42 : 0x80);
  const auto plain = packet(first, other_lane ? kLaneId + 1 : kLaneId, pn, body);
  std::vector<uint8_t> d = seal(plain);
  const std::vector<uint8_t> original = d;
  for (auto [pos, x] : xors) d[pos % d.size()] ^= x;
  if (resize < 0) d.resize(d.size() - static_cast<size_t>(-resize));
  for (int i = 0; i < resize; ++i) d.push_back(static_cast<uint8_t>(i));
  const bool changed = d != original;

  auto o = opener();
  const FrameStatus s = o.open(d);
  if (changed) {
    FUZZ_CHECK(s != FrameStatus::ok);
    return;
  }
  const FrameStatus want = kind >= 2   ? FrameStatus::bad_header
                           : kind == 1 ? FrameStatus::wrong_direction
                           : other_lane ? FrameStatus::foreign_lane
                                        : FrameStatus::ok;
  FUZZ_CHECK(s == want);
  if (s == FrameStatus::ok) FUZZ_CHECK(std::equal(plain.begin(), plain.end(), d.begin(), d.end() - kAeadTagSize));
}

void sequence(FuzzedDataProvider& in) {
  const uint64_t base = in.ConsumeBool() ? UINT64_MAX - 3000 : 0;
  auto o = opener();
  std::set<uint64_t> seen;
  uint64_t highest = 0, counted = 0;
  bool any = false;
  for (int step = 0; step < 64 && in.remaining_bytes() > 0; ++step) {
    const uint64_t pn = base + in.ConsumeIntegralInRange<uint64_t>(0, 3000);
    const bool corrupt = in.ConsumeIntegralInRange(0, 7) == 0;
    const bool count = in.ConsumeIntegralInRange(0, 3) != 0;
    const uint8_t body[3] = {0x01, static_cast<uint8_t>(pn), static_cast<uint8_t>(step)};  // a PING and two bytes
    std::vector<uint8_t> d = seal(packet(0x40, kLaneId, pn, body));
    if (corrupt) d[kHeaderSize] ^= 0x80;

    FrameStatus want = FrameStatus::ok;
    if (any && pn <= highest) {
      if (highest - pn >= security::ReplayWindow::kSize) want = FrameStatus::too_old;
      else if (seen.count(pn)) want = FrameStatus::replayed;
    }
    if (want == FrameStatus::ok && corrupt) want = FrameStatus::forged;
    const FrameStatus s = o.open(d, count);
    FUZZ_CHECK(s == want);
    if (s == FrameStatus::ok) {
      seen.insert(pn);
      highest = any ? std::max(highest, pn) : pn;
      any = true;
      FUZZ_CHECK(d[kHeaderSize] == 0x01 && d[kHeaderSize + 1] == static_cast<uint8_t>(pn));
    }
    if (count || s == FrameStatus::ok) ++counted;
    FUZZ_CHECK(std::accumulate(o.stats().begin(), o.stats().end(), uint64_t{0}) == counted);
    FUZZ_CHECK(o.highest_accepted() == highest);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  FuzzedDataProvider in(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0: raw(std::span<const uint8_t>(data + 1, size - 1)); break;
    case 1: tamper(in); break;
    default: sequence(in); break;
  }
  return 0;
}
