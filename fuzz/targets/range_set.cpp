// transport::RangeSet, which the receiver fills with the packet numbers of
// datagrams that opened (packet numbers are 64-bit, from the peer) and which
// ACK frames are built from. The input is a script of operations — insert,
// remove_below, contains — on values near zero and near 2^64 (where +1
// wraps), with an optional range limit. After each operation the set must
// equal a plain reference model (a sorted list of disjoint, non-adjacent
// ranges kept with 128-bit arithmetic), and insert must report how many
// values were new (mod 2^64: a set of every value has 2^64 of them).
// And the ACK frame the receiver builds from the set (encode_ack_frame)
// decodes to exactly its highest ranges — or nothing is written at all.
#include <fuzzer/FuzzedDataProvider.h>

#include <vector>

#include "core/transport/range_set.hpp"
#include "core/transport/wire.hpp"
#include "fuzz_support.hpp"

using braid::transport::Range;
using braid::transport::RangeSet;
using u128 = unsigned __int128;

namespace {

struct Model {
  struct R {
    u128 lo, hi;  // inclusive
  };
  std::vector<R> rs;  // sorted, disjoint, not adjacent
  size_t max = 0;
  bool forgot = false;

  uint64_t insert(uint64_t lo, uint64_t hi) {
    if (hi < lo) return 0;
    u128 nlo = lo, nhi = hi, fresh = u128{hi} - lo + 1;
    std::vector<R> out;
    for (const R& r : rs) {
      if (r.hi + 1 < nlo || nhi + 1 < r.lo) {  // apart: neither overlaps nor touches
        out.push_back(r);
        continue;
      }
      const u128 olo = std::max(r.lo, u128{lo}), ohi = std::min(r.hi, u128{hi});
      if (olo <= ohi) fresh -= ohi - olo + 1;
      nlo = std::min(nlo, r.lo);
      nhi = std::max(nhi, r.hi);
    }
    out.push_back({nlo, nhi});
    std::sort(out.begin(), out.end(), [](const R& a, const R& b) { return a.lo < b.lo; });
    rs = out;
    if (max && rs.size() > max) {
      rs.erase(rs.begin());
      forgot = true;
    }
    return static_cast<uint64_t>(fresh);
  }
  void remove_below(uint64_t v) {
    std::vector<R> out;
    for (R r : rs) {
      if (r.hi < v) {
        forgot = true;
        continue;
      }
      if (r.lo < v) {
        r.lo = v;
        forgot = true;
      }
      out.push_back(r);
    }
    rs = out;
  }
  bool contains(uint64_t v) const {
    for (const R& r : rs)
      if (r.lo <= v && v <= r.hi) return true;
    return false;
  }
};

uint64_t value(FuzzedDataProvider& in) {
  const uint8_t v = in.ConsumeIntegral<uint8_t>();
  // Low half: small numbers; high half: just below 2^64.
  return v < 128 ? v : UINT64_MAX - (255 - v);
}

void same(const RangeSet& s, const Model& m) {
  FUZZ_CHECK(s.ranges().size() == m.rs.size());
  for (size_t i = 0; i < m.rs.size(); ++i) {
    FUZZ_CHECK(s.ranges()[i].lo == m.rs[i].lo);
    FUZZ_CHECK(s.ranges()[i].hi == m.rs[i].hi);
  }
  FUZZ_CHECK(s.empty() == m.rs.empty());
  if (!m.rs.empty()) {
    FUZZ_CHECK(s.smallest() == m.rs.front().lo);
    FUZZ_CHECK(s.largest() == m.rs.back().hi);
  }
}

// As LaneReceiver::poll_transmit does, with a small range limit.
void ack_of(const RangeSet& s, size_t max_ranges) {
  using namespace braid::transport;
  uint8_t buf[1200];
  ByteWriter w(buf);
  const size_t n = encode_ack_frame(w, s, braid::Duration::micros(100), max_ranges);
  if (n == 0) {
    FUZZ_CHECK(w.written() == 0);
    return;
  }
  FUZZ_CHECK(n <= max_ranges && n <= s.range_count());
  ByteReader r(std::span<const uint8_t>(buf, w.written()));
  Frame f;
  FUZZ_CHECK(decode_frame(r, f) == TransportError::ok && f.type == FrameType::ack && r.empty());
  std::vector<Range> got;
  FUZZ_CHECK(f.ack.for_each_range([&](Range x) { got.push_back(x); }) == TransportError::ok);
  const auto& all = s.ranges();
  FUZZ_CHECK(std::equal(got.begin(), got.end(), all.rbegin(), all.rbegin() + static_cast<long>(n)) && got.size() == n);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Model m;
  m.max = in.ConsumeIntegralInRange<size_t>(0, 6);
  RangeSet s(m.max);
  // 128 operations at most: longer scripts find nothing shorter ones miss,
  // and the model's work per operation grows with the set.
  for (int op = 0; op < 128 && in.remaining_bytes() > 0; ++op) {
    switch (in.ConsumeIntegralInRange(0, 3)) {
      case 0:
      case 1: {
        const uint64_t lo = value(in), hi = value(in);
        FUZZ_CHECK(s.insert(lo, hi) == m.insert(lo, hi));
        break;
      }
      case 2: {
        const uint64_t v = value(in);
        s.remove_below(v);
        m.remove_below(v);
        break;
      }
      default: {
        const uint64_t v = value(in);
        FUZZ_CHECK(s.contains(v) == m.contains(v));
        FUZZ_CHECK(s.below_window(v) == (m.forgot && !m.rs.empty() && v < m.rs.front().lo));
        break;
      }
    }
    same(s, m);
    ack_of(s, 1 + m.max);
  }
  return 0;
}
