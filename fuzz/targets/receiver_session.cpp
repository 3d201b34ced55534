// The receiver's session machine (core/session/receiver.hpp) driven by an
// arbitrary sequence of events — what a hostile sender, a flaky network and
// a slow disk together can make it see: lanes connecting, any message on any
// lane (decoded from fuzzer bytes by the real decoder), pieces verified or
// rejected, offers prepared, transfers finalised or failed by the disk, UDP
// lanes opened or not, the sender coming back, time passing. Properties:
//   - it never crashes, and every action it asks for is well formed;
//   - at most max_lanes lanes are open and joined at once, whatever arrives;
//   - a lane it closed gets no message afterwards;
//   - no FinalizeTransfer for a transfer it did not accept, nor twice;
//   - once the session ended, it asks for nothing more but closes and keeps.
#include <map>
#include <set>

#include "core/session/messages.hpp"
#include "core/session/receiver.hpp"
#include "fuzz_support.hpp"

using namespace braid;
using namespace braid::session;

namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  uint8_t u8() { return n ? (--n, *p++) : 0; }
  uint32_t u32() { return uint32_t(u8()) | uint32_t(u8()) << 8 | uint32_t(u8()) << 16 | uint32_t(u8()) << 24; }
  std::span<const uint8_t> bytes(size_t k) {
    k = std::min(k, n);
    std::span<const uint8_t> s(p, k);
    p += k;
    n -= k;
    return s;
  }
};

wire::Digest root(wire::HashAlgo, std::vector<PieceRecord> r) {
  wire::Digest d;
  d.size = 16;
  uint64_t h = 0;
  for (const auto& x : r) h = h * 31 + x.offset + x.length;
  for (int i = 0; i < 8; ++i) d.bytes[i] = static_cast<uint8_t>(h >> (8 * i));
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in{data, size};
  ReceiverConfig cfg;
  cfg.max_lanes = 1 + in.u8() % 8;
  cfg.advertised = {"127.0.0.1:7878"};
  cfg.root_hash = root;
  cfg.early_answers = in.u8() & 1;  // protocol 9: parts answered as they come, when the offer asks
  Receiver r(cfg);
  Time now = Time::zero();
  r.start(LaneTraits::tcp(), now);
  std::set<LaneNo> closed, joined;
  std::set<uint32_t> accepted, finalised;
  bool ended = false;
  auto drain = [&] {
    while (auto a = r.poll_action()) {
      std::visit(
          [&](const auto& x) {
            using A = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<A, RecvSendMessage>) {
              FUZZ_CHECK(!closed.count(x.lane));
              if (std::holds_alternative<wire::LaneWelcome>(x.msg)) joined.insert(x.lane);
              if (const auto* acc = std::get_if<wire::Accept>(&x.msg)) accepted.insert(acc->transfer_id);
              const auto e = encode(x.msg);  // every message it says encodes
              FUZZ_CHECK(decode_to_sender(e.type, e.payload).has_value());
            } else if constexpr (std::is_same_v<A, RecvCloseLane>) {
              closed.insert(x.lane);
              joined.erase(x.lane);
            } else if constexpr (std::is_same_v<A, FinalizeTransfer>) {
              FUZZ_CHECK(!ended);
              FUZZ_CHECK(r.accepted(x.transfer));
              FUZZ_CHECK(finalised.insert(x.transfer).second);
            } else if constexpr (std::is_same_v<A, SessionEnded>) {
              ended = true;
            } else if constexpr (std::is_same_v<A, PrepareOffer> || std::is_same_v<A, PrepareOfferPart> ||
                                 std::is_same_v<A, OpenUdpLane> || std::is_same_v<A, ExpectPiece>) {
              FUZZ_CHECK(!ended);
            }
          },
          *a);
    }
    FUZZ_CHECK(joined.size() <= cfg.max_lanes + 1);  // lane 0 comes with the session
  };
  drain();
  while (in.n > 0) {
    const uint8_t op = in.u8();
    const LaneNo lane = in.u8() % 12;
    now = now + Duration::millis(in.u8());
    switch (op % 12) {
      case 0:
        (void)r.handle_lane_connected(lane, (op & 0x80) ? LaneTraits::udp() : LaneTraits::tcp(), now);
        break;
      case 1: {  // a message of any type, as the real decoder reads the bytes
        const auto type = static_cast<wire::FrameType>(in.u8() % 21);  // offer_part (20) too
        const size_t len = in.u8();
        if (auto m = decode_to_receiver(type, in.bytes(len))) r.handle_message(lane, *m, now);
        break;
      }
      case 2:  // a well-formed join, which the fuzzer can hardly spell
        r.handle_message(lane, wire::LaneJoin{wire::kProtocolVersion, lane}, now);
        break;
      case 3: {
        const uint32_t t = 1 + in.u8() % 3;
        const uint8_t how = in.u8();
        if (how & 1) {
          // Sync: verdicts on any entries (a real engine names files of its
          // offer; the machine must not trust that for its records).
          wire::Accept a{t, {}};
          for (uint32_t e = 0, n = how >> 4; e < n; ++e)
            a.files.push_back({e * 2 + (in.u8() & 1), static_cast<wire::FileVerdict>(1 + in.u8() % 4)});
          r.handle_offer_prepared(t, a, now);
        }
        else r.handle_offer_prepared(t, wire::Refuse{t, wire::RefuseReason::declined, "no"}, now);
        break;
      }
      case 4: {
        const uint32_t t = 1 + in.u8() % 3;
        const uint32_t piece = in.u8();
        const uint64_t off = uint64_t(in.u32()), len = 1 + uint64_t(in.u32() % (4 << 20));
        r.handle_piece_verified(lane, t, piece, PieceRecord{off, len, {}}, Duration::millis(1), now);
        break;
      }
      case 5:
        r.handle_piece_rejected(lane, 1 + in.u8() % 3, in.u8(), wire::AckStatus::hash_mismatch, now);
        break;
      case 6:
        r.handle_finalized(1 + in.u8() % 3, (in.u8() & 1) ? wire::ResultStatus::verified : wire::ResultStatus::no_space,
                           "", now);
        break;
      case 7:
        if (op & 0x40) r.handle_lane_failed(lane, "reset", now);
        else r.handle_timeout(now + Duration::seconds(in.u8()));
        break;
      case 8:  // the disk filled up, or the journal could not be written
        r.handle_transfer_failed(1 + in.u8() % 3, wire::ResultStatus::no_space, "full", now);
        break;
      case 9:  // the same sender opened another session
        r.handle_peer_returned(now);
        break;
      case 10:  // the engine's answer to OpenUdpLane
        r.handle_udp_lane_opened(lane, (op & 0x40) ? "" : "127.0.0.1:7878", (op & 0x40) ? "no port" : "", now);
        break;
      case 11:  // the engine's answer to PrepareOfferPart (protocol 9), asked or not
        if (op & 0x40) r.handle_part_declined(1 + in.u8() % 3, now);
        else r.handle_part_prepared(1 + in.u8() % 3, now);
        break;
    }
    drain();
  }
  return 0;
}
