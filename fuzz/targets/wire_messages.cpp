// Every lane message decoder (core/wire/messages.hpp), dispatched on the
// first input byte (the frame type; the rest is the payload, as a lane hands
// it to the decoder). Properties, for every payload a decoder accepts:
//   - decode → encode → decode succeeds and gives the same value (compared
//     through its encoding, which covers every field);
//   - the decoders accept only canonical encodings: re-encoding gives back
//     exactly the input (no two payloads mean the same message, so nothing a
//     peer sends can hide in slack bytes). Offer is the one exception: its
//     mode keeps the permission bits only (its own target checks it).
//   - lengths and counts stay within the documented limits (a sparse
//     file's data ranges: bounded, ordered, inside the file).
// Offers and piece headers have targets of their own, with more properties.
#include <vector>

#include "core/wire/messages.hpp"
#include "fuzz_support.hpp"

using namespace braid;
using namespace braid::wire;

namespace {

template <class M>
void check(std::span<const uint8_t> payload, bool canonical = true) {
  M m{};
  if (!decode(payload, m)) return;
  const std::vector<uint8_t> once = encode_message(m);
  if (canonical) FUZZ_CHECK(std::equal(once.begin(), once.end(), payload.begin(), payload.end()));
  M again{};
  FUZZ_CHECK(decode(once, again));
  FUZZ_CHECK(encode_message(again) == once);
}

void limits(std::span<const uint8_t> payload, FrameType type) {
  switch (type) {
    case FrameType::addresses: {
      Addresses a;
      if (decode(payload, a)) FUZZ_CHECK(a.endpoints.size() <= kMaxAddresses);
      break;
    }
    case FrameType::accept: {
      Accept a;
      if (!decode(payload, a)) break;
      FUZZ_CHECK(a.held.size() <= kMaxHeldRanges);
      for (const auto& h : a.held) {
        FUZZ_CHECK(h.length > 0 && h.offset <= UINT64_MAX - h.length);
        FUZZ_CHECK(h.hash.size == 16 || h.hash.size == 32);
      }
      // Sync: verdicts by entry, strictly increasing, each one the protocol names.
      FUZZ_CHECK(a.files.size() <= kMaxManifestEntries);
      for (size_t i = 0; i < a.files.size(); ++i) {
        FUZZ_CHECK(i == 0 || a.files[i].entry > a.files[i - 1].entry);
        FUZZ_CHECK(file_verdict_name(a.files[i].verdict) != std::string("unknown"));
      }
      FUZZ_CHECK(a.extraneous.size() <= kMaxListedExtraneous && a.extraneous.size() <= a.extraneous_count);
      for (const auto& p : a.extraneous) FUZZ_CHECK(p.size() <= kMaxPathBytes);
      break;
    }
    case FrameType::offer: {
      // Sparse files: data ranges only on files, bounded, sorted, disjoint,
      // inside the file; the data never exceeds the file set.
      Offer o;
      if (!decode(payload, o)) break;
      for (const auto& e : o.entries) {
        if (!e.data) continue;
        FUZZ_CHECK(e.kind == EntryKind::file && e.data->size() <= kMaxDataRanges);
        uint64_t end = 0;
        for (size_t i = 0; i < e.data->size(); ++i) {
          const DataRange& r = (*e.data)[i];
          FUZZ_CHECK(r.length > 0 && r.offset <= e.size && r.length <= e.size - r.offset);
          FUZZ_CHECK(i == 0 || r.offset > end);
          end = r.offset + r.length;
        }
      }
      FUZZ_CHECK(o.data_bytes() <= o.total_bytes());
      // Hard links: a file of no bytes, to an earlier file that is no link.
      for (size_t i = 0; i < o.entries.size(); ++i) {
        const auto& e = o.entries[i];
        if (!e.hard_link_to) continue;
        FUZZ_CHECK(e.kind == EntryKind::file && e.size == 0 && !e.data && *e.hard_link_to < i);
        FUZZ_CHECK(o.entries[*e.hard_link_to].kind == EntryKind::file && !o.entries[*e.hard_link_to].hard_link_to);
      }
      // Owners and xattrs: none on a hard link; xattrs not on symlinks,
      // sorted, distinct, bounded, each of a class the list says it covers.
      for (const auto& e : o.entries) {
        if (e.hard_link_to) FUZZ_CHECK(!e.owner && !e.group && !e.xattrs);
        for (const auto* who : {&e.owner, &e.group})
          if (*who) FUZZ_CHECK((*who)->name.size() <= kMaxOwnerNameBytes);
        if (!e.xattrs) continue;
        FUZZ_CHECK(e.kind != EntryKind::symlink && e.xattrs->items.size() <= kMaxXattrs);
        FUZZ_CHECK(e.xattrs->with_xattrs || e.xattrs->with_acls);
        for (size_t i = 0; i < e.xattrs->items.size(); ++i) {
          const auto& a = e.xattrs->items[i];
          const char c = xattr_class(a.name);
          FUZZ_CHECK((c == 'x' && e.xattrs->with_xattrs) || (c == 'a' && e.xattrs->with_acls));
          FUZZ_CHECK(a.name.size() <= kMaxXattrNameBytes && a.value.size() <= kMaxXattrValueBytes);
          FUZZ_CHECK(i == 0 || e.xattrs->items[i - 1].name < a.name);
        }
      }
      break;
    }
    case FrameType::offer_part: {
      // Never empty, within one frame's entry limit and the whole offer's;
      // a hard link names an earlier entry of the whole offer, and one in
      // this part is a file that is no link.
      OfferPart p;
      if (!decode(payload, p)) break;
      FUZZ_CHECK(!p.entries.empty() && p.entries.size() <= kMaxManifestEntries);
      FUZZ_CHECK(uint64_t{p.first_entry} + p.entries.size() <= kMaxOfferEntries);
      for (size_t i = 0; i < p.entries.size(); ++i) {
        const auto& e = p.entries[i];
        if (!e.hard_link_to) continue;
        FUZZ_CHECK(e.kind == EntryKind::file && e.size == 0 && !e.data && *e.hard_link_to < p.first_entry + i);
        if (*e.hard_link_to >= p.first_entry) {
          const auto& first = p.entries[*e.hard_link_to - p.first_entry];
          FUZZ_CHECK(first.kind == EntryKind::file && !first.hard_link_to);
        }
      }
      break;
    }
    case FrameType::refuse: {
      Refuse r;
      if (decode(payload, r)) FUZZ_CHECK(r.message.size() <= kMaxReasonLength && refuse_reason_name(r.reason) != std::string("unknown"));
      break;
    }
    case FrameType::result: {
      TransferResult r;
      if (decode(payload, r)) FUZZ_CHECK(result_status_name(r.status) != std::string("unknown"));
      break;
    }
    case FrameType::done: {
      Done d;
      if (decode(payload, d)) FUZZ_CHECK(d.root.hex().size() == 2u * d.root.size);
      break;
    }
    case FrameType::udp_piece: {
      UdpPiece u;
      if (decode(payload, u)) FUZZ_CHECK(u.piece_offset <= UINT64_MAX - u.piece_length);
      break;
    }
    default:
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // Any byte picks a decoder (20 choices: the 20 types, piece_data's header among them).
  const auto type = static_cast<FrameType>(data[0] % 23 + 1);
  const std::span<const uint8_t> payload(data + 1, size - 1);
  switch (type) {
    case FrameType::lane_join: check<LaneJoin>(payload); break;
    case FrameType::lane_welcome: check<LaneWelcome>(payload); break;
    case FrameType::addresses: check<Addresses>(payload); break;
    case FrameType::offer: check<Offer>(payload, false); break;
    case FrameType::accept: check<Accept>(payload); break;
    case FrameType::refuse: check<Refuse>(payload); break;
    case FrameType::piece_data: {
      PieceHeader h;
      size_t n = 0;
      (void)decode_piece_header(payload, h, n);
      break;
    }
    case FrameType::piece_abort: check<PieceAbort>(payload); break;
    case FrameType::ack: check<Ack>(payload); break;
    case FrameType::lane_closed: check<LaneClosed>(payload); break;
    case FrameType::done: check<Done>(payload); break;
    case FrameType::result: check<TransferResult>(payload); break;
    case FrameType::error: check<ErrorMessage>(payload); break;
    case FrameType::bye: check<Bye>(payload); break;
    case FrameType::udp_open: check<UdpOpen>(payload); break;
    case FrameType::udp_ready: check<UdpReady>(payload); break;
    case FrameType::udp_piece: check<UdpPiece>(payload); break;
    case FrameType::lane_ack: check<LaneAck>(payload); break;
    case FrameType::offer_part: check<OfferPart>(payload, false); break;
    case FrameType::cancel: check<Cancel>(payload); break;
    case FrameType::accept_part: check<AcceptPart>(payload); break;
    case FrameType::accept_files: check<AcceptFiles>(payload); break;
    default: {
      // 23: the piece header's second overload, data elsewhere.
      PieceHeader h;
      (void)decode_piece_header(payload, payload.size() > PieceHeader::kSize ? payload.size() - PieceHeader::kSize : 0, h);
      break;
    }
  }
  limits(payload, type);
  return 0;
}
