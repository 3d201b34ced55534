// An offer in parts (protocol 6): an offer frame that is `continued`, then
// offer_part frames, put together as the receiver does
// (wire::append_offer_part). Input: u8 count, then `count` frames, each a
// u16 length (big endian) and that many bytes; the first is the offer's
// payload, the rest offer_part payloads. Properties:
//   - appending never shrinks the offer, and a refused part leaves it as it
//     was; a part sent again changes nothing;
//   - once complete, the offer is no longer continued, its sizes add up
//     without overflow, and every hard link names an earlier entry that is
//     a file and no link — the same rules a single offer frame keeps;
//   - split_offer of what was put together (with tiny parts), encoded,
//     decoded and put together again, gives back the same entries;
//   - kept as shared parts (wire::EntryParts, a receiver answering part by
//     part), every part gets the same answer and the entries, their total
//     and their encoding are the same as the offer put together.
#include <vector>

#include "core/wire/entry_parts.hpp"
#include "core/wire/messages.hpp"
#include "fuzz_support.hpp"

using namespace braid;
using namespace braid::wire;

namespace {

void check_whole(const Offer& o) {
  FUZZ_CHECK(!o.continued);
  unsigned __int128 sum = 0;
  for (const auto& e : o.entries) sum += e.size;
  FUZZ_CHECK(sum <= UINT64_MAX && o.total_bytes() == sum);
  for (size_t i = 0; i < o.entries.size(); ++i) {
    const auto& e = o.entries[i];
    if (!e.hard_link_to) continue;
    FUZZ_CHECK(e.kind == EntryKind::file && e.size == 0 && !e.data && *e.hard_link_to < i);
    FUZZ_CHECK(o.entries[*e.hard_link_to].kind == EntryKind::file && !o.entries[*e.hard_link_to].hard_link_to);
  }
}

void check_split(const Offer& whole) {
  const SplitOffer split = split_offer(whole, 64);
  FUZZ_CHECK(split.head.continued == !split.parts.empty());
  Offer again;
  FUZZ_CHECK(decode(encode_message(split.head), again));
  bool complete = !again.continued;
  for (const auto& p : split.parts) {
    FUZZ_CHECK(!complete);
    OfferPart decoded;
    FUZZ_CHECK(decode(encode_message(p), decoded));
    FUZZ_CHECK(append_offer_part(again, decoded, complete).empty());
  }
  FUZZ_CHECK(complete);
  FUZZ_CHECK(again.entries == whole.entries);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t count = data[0] % 8 + 1;
  std::vector<std::span<const uint8_t>> frames;
  size_t at = 1;
  while (frames.size() < count && at + 2 <= size) {
    const size_t len = size_t{data[at]} << 8 | data[at + 1];
    at += 2;
    if (len > size - at) break;
    frames.emplace_back(data + at, len);
    at += len;
  }
  if (frames.empty()) return 0;
  Offer offer;
  if (!decode(frames[0], offer)) return 0;
  if (!offer.continued) {
    check_whole(offer);
    check_split(offer);
    return 0;
  }
  // The same offer as its parts: the head's fields and its entries as the first part.
  Offer head = offer;
  EntryParts parts;
  parts.append(std::make_shared<const std::vector<ManifestEntry>>(head.entries));
  head.entries.clear();
  bool complete = false;
  for (size_t i = 1; i < frames.size() && !complete; ++i) {
    OfferPart part;
    if (!decode(frames[i], part)) continue;
    const size_t before = offer.entries.size();
    const Offer kept = offer;
    const std::string why = append_offer_part(offer, part, complete);
    bool parts_complete = false;
    FUZZ_CHECK(append_offer_part(head, parts, part, parts_complete) == why);
    FUZZ_CHECK(parts_complete == complete && parts.size() == offer.entries.size() && head.continued == offer.continued);
    if (!why.empty()) {
      FUZZ_CHECK(offer.entries == kept.entries && offer.continued == kept.continued && !complete);
      continue;
    }
    FUZZ_CHECK(offer.entries.size() >= before);
    if (offer.entries.size() == before) FUZZ_CHECK(!complete);  // a part sent again
    // Sent again now: nothing changes.
    bool again_complete = false;
    const size_t after = offer.entries.size();
    if (complete) break;
    FUZZ_CHECK(append_offer_part(offer, part, again_complete).empty() && !again_complete);
    FUZZ_CHECK(offer.entries.size() == after);
  }
  if (!complete) return 0;
  check_whole(offer);
  check_split(offer);
  FUZZ_CHECK(std::vector<ManifestEntry>(parts.begin(), parts.end()) == offer.entries);
  FUZZ_CHECK(parts.total_bytes() == offer.total_bytes());
  std::vector<uint8_t> joined;
  encode_streamed(head, parts, [&](std::span<const uint8_t> piece) { joined.insert(joined.end(), piece.begin(), piece.end()); });
  FUZZ_CHECK(joined == encode_message(offer));
  return 0;
}
