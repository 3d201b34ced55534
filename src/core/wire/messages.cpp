#include "core/wire/messages.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

#include "core/wire/byte_codec.hpp"
#include "core/wire/data_ranges.hpp"
#include "core/wire/entry_parts.hpp"

namespace braid::wire {
namespace {

void put_digest(ByteWriter& w, const Digest& d) {
  w.u8(d.size);
  w.raw(std::span<const uint8_t>(d.bytes.data(), d.size));
}

bool valid_digest_size(uint8_t n) { return n == 16 || n == 32; }

void get_digest(ByteReader& r, Digest& d) {
  d.size = r.u8();
  if (!valid_digest_size(d.size)) return r.fail();
  r.raw(std::span<uint8_t>(d.bytes.data(), d.size));
}

bool finish(const ByteReader& r) { return r.ok() && r.at_end(); }

/// A sync's file verdicts (accept, accept_files): u32 n, then n records of
/// u32 entry and u8 verdict, the entries strictly increasing.
void put_decisions(ByteWriter& w, const std::vector<FileDecision>& files) {
  w.u32(static_cast<uint32_t>(files.size()));
  for (const auto& f : files) {
    w.u32(f.entry);
    w.u8(static_cast<uint8_t>(f.verdict));
  }
}

bool get_decisions(ByteReader& r, std::vector<FileDecision>& files) {
  const uint32_t n = r.u32();
  if (!r.ok() || n > kMaxManifestEntries || n > r.remaining() / 5) return false;
  files.clear();
  files.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    FileDecision f;
    f.entry = r.u32();
    const uint8_t v = r.u8();
    if (v < 1 || v > 4) return false;
    f.verdict = static_cast<FileVerdict>(v);
    if (!files.empty() && f.entry <= files.back().entry) return false;
    files.push_back(f);
  }
  return r.ok();
}

/// The offer's entry details, after its flags byte (protocol 5; kinds 3-5 since 6): u32 n, then
/// n records of u32 entry, u8 kind and the kind's fields, by (entry, kind)
/// strictly increasing. Kinds: 1 data ranges (u32 k, k × u64 offset, u64
/// length), 2 hard link (u32 entry of the file it is another name of),
/// 3 owner and 4 group (u32 id, bytes name), 5 extended attributes (u8
/// classes: bit 0 xattrs, bit 1 ACLs; u32 k; k × bytes name, bytes value).
/// An unknown kind is refused: it would change what the entry means.
constexpr uint8_t kDetailDataRanges = 1;
constexpr uint8_t kDetailHardLink = 2;
constexpr uint8_t kDetailOwner = 3;
constexpr uint8_t kDetailGroup = 4;
constexpr uint8_t kDetailXattrs = 5;
constexpr uint8_t kDetailKinds = 5;

/// `after_entry()` once each entry's details are written (encode_streamed
/// hands the bytes on there).
template <class Entries, class AfterEntry>
void put_details(ByteWriter& w, const Entries& entries, AfterEntry&& after_entry) {
  uint32_t n = 0;
  for (const auto& e : entries)
    n += e.data.has_value() + e.hard_link_to.has_value() + e.owner.has_value() + e.group.has_value() +
         e.xattrs.has_value();
  w.u32(n);
  uint32_t i = 0;
  for (const ManifestEntry& e : entries) {
    if (e.data) {
      w.u32(i);
      w.u8(kDetailDataRanges);
      w.u32(static_cast<uint32_t>(e.data->size()));
      for (const auto& r : *e.data) {
        w.u64(r.offset);
        w.u64(r.length);
      }
    }
    if (e.hard_link_to) {
      w.u32(i);
      w.u8(kDetailHardLink);
      w.u32(*e.hard_link_to);
    }
    for (const auto& [kind, who] : {std::pair{kDetailOwner, &e.owner}, std::pair{kDetailGroup, &e.group}}) {
      if (!*who) continue;
      w.u32(i);
      w.u8(kind);
      w.u32((*who)->id);
      w.bytes((*who)->name);
    }
    if (const auto& x = e.xattrs) {
      w.u32(i);
      w.u8(kDetailXattrs);
      w.u8(static_cast<uint8_t>(x->with_xattrs | x->with_acls << 1));
      w.u32(static_cast<uint32_t>(x->items.size()));
      for (const auto& a : x->items) {
        w.bytes(a.name);
        w.bytes(a.value);
      }
    }
    after_entry();
    ++i;
  }
}

bool get_xattrs(ByteReader& r, const ManifestEntry& e, XattrList& out) {
  const uint8_t classes = r.u8();
  const uint32_t k = r.u32();
  // Smallest item: two lengths and a name of "user.x".
  if (!r.ok() || classes == 0 || classes > 3 || k > kMaxXattrs || k > r.remaining() / 14) return false;
  out.with_xattrs = classes & 1;
  out.with_acls = classes & 2;
  out.items.resize(k);
  for (size_t j = 0; j < k && r.ok(); ++j) {
    Xattr& a = out.items[j];
    a.name = r.bytes(kMaxXattrNameBytes);
    a.value = r.bytes(kMaxXattrValueBytes);
    const char c = xattr_class(a.name);
    if (!r.ok() || (j > 0 && a.name <= out.items[j - 1].name)) return false;  // sorted, distinct
    if (c == 0 || (c == 'x' && !out.with_xattrs) || (c == 'a' && !out.with_acls)) return false;
    if (a.name == "system.posix_acl_default" && e.kind != EntryKind::directory) return false;
  }
  return r.ok();
}


/// `base`: the index in the whole offer of entries[0] (an offer_part's
/// first_entry). A hard link must name an earlier entry; one that names an
/// entry of an earlier part is checked when the parts are put together
/// (append_offer_part), the rest here.
bool get_details(ByteReader& r, std::vector<ManifestEntry>& entries, uint64_t base = 0) {
  const uint32_t n = r.u32();
  constexpr size_t kSmallestDetail = 4 + 1 + 4;
  if (!r.ok() || n > kDetailKinds * uint64_t{entries.size()} || n > r.remaining() / kSmallestDetail) return false;
  int64_t last = -1;  // (entry << 8 | kind) of the record before
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    const uint32_t at = r.u32();
    const uint8_t kind = r.u8();
    const int64_t key = static_cast<int64_t>(at) << 8 | kind;
    if (!r.ok() || at >= entries.size() || key <= last) return false;
    last = key;
    ManifestEntry& e = entries[at];
    if (kind == kDetailHardLink) {
      // Another name of an earlier file that holds the bytes: a link takes
      // none itself, and never leads to another link.
      const uint32_t first = r.u32();
      if (!r.ok() || e.kind != EntryKind::file || e.size != 0 || e.data || first >= base + at) return false;
      if (first >= base &&
          (entries[first - base].kind != EntryKind::file || entries[first - base].hard_link_to))
        return false;
      e.hard_link_to = first;
      continue;
    }
    if (kind == kDetailOwner || kind == kDetailGroup) {
      // A hard link shares its file's inode: it has no owner of its own.
      OwnerId who;
      who.id = r.u32();
      who.name = r.bytes(kMaxOwnerNameBytes);
      if (!r.ok() || e.hard_link_to || who.name.find('\0') != std::string::npos) return false;
      (kind == kDetailOwner ? e.owner : e.group) = std::move(who);
      continue;
    }
    if (kind == kDetailXattrs) {
      XattrList x;
      if (e.kind == EntryKind::symlink || e.hard_link_to || !get_xattrs(r, e, x)) return false;
      e.xattrs = std::move(x);
      continue;
    }
    if (kind != kDetailDataRanges) return false;
    const uint32_t k = r.u32();
    if (!r.ok() || e.kind != EntryKind::file || k > kMaxDataRanges || k > r.remaining() / 16) return false;
    std::vector<DataRange> ranges(k);
    for (auto& d : ranges) {
      d.offset = r.u64();
      d.length = r.u64();
    }
    if (!r.ok() || !valid_data_ranges(ranges, e.size)) return false;
    e.data = std::move(ranges);
  }
  return r.ok();
}

/// Bytes one entry takes in an offer's entry list (without its details).
size_t entry_wire_bytes(const ManifestEntry& e) { return 1 + 4 + e.path.size() + 8 + 4 + 8 + 4 + 4 + e.link_target.size(); }
size_t details_wire_bytes(const ManifestEntry& e) {
  size_t n = (e.data ? 4 + 1 + 4 + 16 * e.data->size() : 0) + (e.hard_link_to ? 4 + 1 + 4 : 0);
  for (const auto* who : {&e.owner, &e.group})
    if (*who) n += 4 + 1 + 4 + 4 + (*who)->name.size();
  if (e.xattrs) {
    n += 4 + 1 + 1 + 4;
    for (const auto& a : e.xattrs->items) n += 4 + a.name.size() + 4 + a.value.size();
  }
  return n;
}

/// `after_entry()` once each entry is written (as put_details).
template <class Entries, class AfterEntry>
void put_entries(ByteWriter& w, const Entries& entries, AfterEntry&& after_entry) {
  w.u32(static_cast<uint32_t>(entries.size()));
  for (const auto& e : entries) {
    w.u8(static_cast<uint8_t>(e.kind));
    w.bytes(e.path);
    w.u64(e.size);
    w.u32(e.mode);
    w.i64(e.mtime_sec);
    w.u32(e.mtime_nsec);
    w.bytes(e.link_target.str());
    after_entry();
  }
}

/// `total`: the sum of file sizes so far (of earlier parts too), which must
/// not wrap past 2^64 - 1.
bool get_entries(ByteReader& r, std::vector<ManifestEntry>& out, uint64_t& total) {
  const uint32_t n = r.u32();
  if (!r.ok() || n > kMaxManifestEntries || n > r.remaining() / 30) return false;  // 30: smallest entry
  out.clear();
  out.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    ManifestEntry e;
    const uint8_t kind = r.u8();
    if (kind < 1 || kind > 3) return false;
    e.kind = static_cast<EntryKind>(kind);
    e.path = r.bytes(kMaxPathBytes);
    e.size = r.u64();
    e.mode = r.u32() & 07777;
    e.mtime_sec = r.i64();
    e.mtime_nsec = r.u32();
    e.link_target = r.bytes(kMaxPathBytes);
    if (e.mtime_nsec >= 1'000'000'000u) return false;
    if (e.kind != EntryKind::file && e.size != 0) return false;
    // The receiver sizes the transfer's byte space (and its free-space check)
    // by the sum: sizes that wrap past 2^64 would make it tiny.
    if (e.size > UINT64_MAX - total) return false;
    total += e.size;
    out.push_back(std::move(e));
  }
  return r.ok();
}

/// The offer's flags byte (after the entries): discard (`braid probe`), then
/// the sync options, a bit each in SyncOptions' order. Unknown bits are refused.
/// Bit 7: the offer is continued in offer_part frames (protocol 6).
constexpr uint8_t kOfferDiscard = 1;
constexpr uint8_t kOfferContinued = 0x80;
constexpr uint8_t kOfferFlagsKnown = 0xff;
/// The options byte after the backup options (protocol 9), bit 0: the
/// sender takes accept_part answers (Offer::early_answers).
constexpr uint8_t kOfferEarlyAnswers = 1;
/// Bit 1 (protocol 10, with bit 0 only): the entries come in path order (Offer::ordered).
constexpr uint8_t kOfferOrdered = 2;
/// Bit 2 (protocol 11): Offer::verdicts_apart; with or without bit 0.
constexpr uint8_t kOfferVerdictsApart = 4;

uint8_t offer_flags(const Offer& m) {
  const SyncOptions& s = m.sync;
  return static_cast<uint8_t>((m.discard ? kOfferDiscard : 0) | s.sync << 1 | s.checksum << 2 | s.update << 3 |
                              s.ignore_existing << 4 | s.delete_extraneous << 5 | s.dry_run << 6 |
                              (m.continued ? kOfferContinued : 0));
}

SyncOptions sync_from_flags(uint8_t b) {
  return SyncOptions{bool(b & 2), bool(b & 4), bool(b & 8), bool(b & 16), bool(b & 32), bool(b & 64)};
}

}  // namespace

char xattr_class(std::string_view name) {
  if (name == "system.posix_acl_access" || name == "system.posix_acl_default") return 'a';
  // A namespace and a name after it, no NUL (names cross as C strings).
  if (name.find('\0') != std::string_view::npos) return 0;
  for (std::string_view ns : {"user.", "trusted.", "security."})
    if (name.size() > ns.size() && name.substr(0, ns.size()) == ns) return 'x';
  return 0;
}

const char* hash_algo_name(HashAlgo a) { return a == HashAlgo::sha256 ? "sha256" : "xxh3"; }

const char* refuse_reason_name(RefuseReason r) {
  switch (r) {
    case RefuseReason::declined: return "declined";
    case RefuseReason::bad_path: return "bad_path";
    case RefuseReason::not_writable: return "not_writable";
    case RefuseReason::no_space: return "no_space";
    case RefuseReason::bad_offer: return "bad_offer";
    case RefuseReason::busy: return "busy";
  }
  return "unknown";
}

const char* file_verdict_name(FileVerdict v) {
  switch (v) {
    case FileVerdict::unchanged: return "unchanged";
    case FileVerdict::newer_here: return "newer_here";
    case FileVerdict::exists_here: return "exists_here";
    case FileVerdict::older_here: return "older_here";
  }
  return "unknown";
}

const char* result_status_name(ResultStatus s) {
  switch (s) {
    case ResultStatus::verified: return "verified";
    case ResultStatus::root_mismatch: return "root_mismatch";
    case ResultStatus::incomplete: return "incomplete";
    case ResultStatus::write_failed: return "write_failed";
    case ResultStatus::no_space: return "no_space";
  }
  return "unknown";
}

std::string Digest::hex() const {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < size; ++i) {
    s += digits[bytes[i] >> 4];
    s += digits[bytes[i] & 15];
  }
  return s;
}

Offer offer_fields(const Offer& offer) {
  Offer fields;
  fields.transfer_id = offer.transfer_id;
  fields.hash = offer.hash;
  fields.chunk_size = offer.chunk_size;
  fields.discard = offer.discard;
  fields.sync = offer.sync;
  fields.continued = offer.continued;
  fields.early_answers = offer.early_answers;
  fields.ordered = offer.ordered;
  fields.verdicts_apart = offer.verdicts_apart;
  fields.version = offer.version;
  return fields;
}

uint64_t Offer::total_bytes() const {
  uint64_t t = 0;
  for (const auto& e : entries)
    if (e.kind == EntryKind::file) t += e.size;
  return t;
}

uint64_t ManifestEntry::data_bytes() const {
  if (kind != EntryKind::file) return 0;
  if (!data) return size;
  uint64_t t = 0;
  for (const auto& r : *data) t += r.length;
  return t;
}

uint64_t Offer::data_bytes() const {
  uint64_t t = 0;
  for (const auto& e : entries) t += e.data_bytes();
  return t;
}

size_t offer_entry_bytes(const ManifestEntry& e) { return entry_wire_bytes(e) + details_wire_bytes(e); }

std::vector<size_t> offer_cuts(std::span<const ManifestEntry> entries, size_t part_bytes) {
  std::vector<size_t> cuts{0};
  size_t bytes = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const size_t b = entry_wire_bytes(entries[i]) + details_wire_bytes(entries[i]);
    const size_t in_part = i - cuts.back();
    if (in_part > 0 && (bytes + b > part_bytes || in_part >= kMaxManifestEntries)) {
      cuts.push_back(i);
      bytes = 0;
    }
    bytes += b;
  }
  cuts.push_back(entries.size());
  return cuts;
}

std::vector<size_t> offer_cuts(const Offer& offer, size_t part_bytes) { return offer_cuts(offer.entries, part_bytes); }

Offer offer_head(const Offer& fields, std::span<const ManifestEntry> entries, const std::vector<size_t>& cuts) {
  Offer head;
  head.transfer_id = fields.transfer_id;
  head.hash = fields.hash;
  head.chunk_size = fields.chunk_size;
  head.discard = fields.discard;
  head.sync = fields.sync;
  head.version = fields.version;
  head.entries.assign(entries.begin(), entries.begin() + static_cast<ptrdiff_t>(cuts[1]));
  head.continued = cuts.size() > 2;
  head.early_answers = fields.early_answers && head.continued;
  head.ordered = fields.ordered && head.early_answers;
  head.verdicts_apart = fields.verdicts_apart;
  return head;
}

Offer offer_head(const Offer& offer, const std::vector<size_t>& cuts) { return offer_head(offer, offer.entries, cuts); }

OfferPart offer_part(uint32_t transfer_id, std::span<const ManifestEntry> entries, const std::vector<size_t>& cuts,
                     size_t k) {
  OfferPart p;
  p.transfer_id = transfer_id;
  p.first_entry = static_cast<uint32_t>(cuts[k]);
  p.entries.assign(entries.begin() + static_cast<ptrdiff_t>(cuts[k]),
                   entries.begin() + static_cast<ptrdiff_t>(cuts[k + 1]));
  p.last = k + 2 == cuts.size();
  return p;
}

OfferPart offer_part(const Offer& offer, const std::vector<size_t>& cuts, size_t k) {
  return offer_part(offer.transfer_id, offer.entries, cuts, k);
}

SplitOffer split_offer(const Offer& offer, size_t part_bytes) {
  const std::vector<size_t> cuts = offer_cuts(offer, part_bytes);
  SplitOffer out{offer_head(offer, cuts), {}};
  for (size_t k = 1; k + 1 < cuts.size(); ++k) out.parts.push_back(offer_part(offer, cuts, k));
  return out;
}

namespace {

/// What append_offer_part checks of a part against the `have` entries so far
/// (a vector or EntryParts) of the offer `head`; `again`: the part was sent
/// again (its lane died) and is here already.
template <class Entries>
std::string check_offer_part(const Offer& head, const Entries& have, uint64_t total, const OfferPart& part,
                             bool& again) {
  again = false;
  if (part.transfer_id != head.transfer_id) return "an offer part of another transfer";
  const uint64_t end = uint64_t{part.first_entry} + part.entries.size();
  if (end <= have.size()) {
    again = true;
    return {};
  }
  if (!head.continued) return "an offer part after the offer's last one";
  if (part.first_entry != have.size())
    return "an offer part for entries " + std::to_string(part.first_entry) + "… where entry " +
           std::to_string(have.size()) + " comes next";
  if (end > kMaxOfferEntries) return "an offer of more than " + std::to_string(kMaxOfferEntries) + " entries";
  for (const auto& e : part.entries) {
    if (e.size > UINT64_MAX - total) return "an offer whose sizes add up past 2^64 bytes";
    total += e.size;
    // In path order no entry names another: its receiver keeps no entry it
    // wrote (Offer::ordered), so the one named may be gone.
    if (e.hard_link_to && head.ordered) return "an offer in path order links a file to another entry";
    // A link to an entry of an earlier part: decode could not see it.
    if (e.hard_link_to && *e.hard_link_to < have.size()) {
      const ManifestEntry& first = have[*e.hard_link_to];
      if (first.kind != EntryKind::file || first.hard_link_to)
        return "an offer part links a file to an entry that is no file";
    }
  }
  return {};
}

}  // namespace

std::string append_offer_part(Offer& offer, OfferPart&& part, bool& complete) {
  complete = false;
  bool again = false;
  if (std::string bad = check_offer_part(offer, offer.entries, offer.total_bytes(), part, again); !bad.empty() || again)
    return bad;
  reserve_to_append(offer.entries, part.entries.size());
  offer.entries.insert(offer.entries.end(), std::make_move_iterator(part.entries.begin()),
                       std::make_move_iterator(part.entries.end()));
  if (part.last) {
    offer.continued = false;
    complete = true;
  }
  return {};
}

std::string append_offer_part(Offer& offer, const OfferPart& part, bool& complete) {
  return append_offer_part(offer, OfferPart(part), complete);
}

std::string append_offer_part(Offer& head, EntryParts& entries, OfferPart&& part, bool& complete) {
  complete = false;
  bool again = false;
  if (std::string bad = check_offer_part(head, entries, entries.total_bytes(), part, again); !bad.empty() || again)
    return bad;
  entries.append(std::make_shared<const std::vector<ManifestEntry>>(std::move(part.entries)));
  if (part.last) {
    head.continued = false;
    complete = true;
  }
  return {};
}

std::string append_offer_part(Offer& head, EntryParts& entries, const OfferPart& part, bool& complete) {
  return append_offer_part(head, entries, OfferPart(part), complete);
}

size_t EntryParts::part_of(size_t i) const {
  // The last part whose first entry is at or before i.
  return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), i) - starts_.begin()) - 1;
}

const ManifestEntry& EntryParts::operator[](size_t i) const {
  const size_t k = part_of(i);
  return (*held(k))[i - starts_[k]];
}

const EntryParts::Part& EntryParts::held(size_t k) const {
  if (k < released_) throw std::out_of_range("entry part " + std::to_string(k) + " was let go");
  return parts_[k];
}

// ---- encode -------------------------------------------------------------------

void encode(const LaneJoin& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.version);
  w.u32(m.lane_id);
}

void encode(const LaneWelcome& m, std::vector<uint8_t>& out) { ByteWriter(out).u32(m.lane_id); }

void encode(const Addresses& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  // The protocol token takes the list's last place (kMaxAddresses in all).
  const size_t n = std::min(m.endpoints.size(), kMaxAddresses - (m.protocol ? 1 : 0));
  w.u32(static_cast<uint32_t>(n + (m.protocol ? 1 : 0)));
  for (size_t i = 0; i < n; ++i) w.bytes(m.endpoints[i]);
  if (m.protocol) w.bytes(std::string(kProtocolToken) + std::to_string(m.protocol));
}

namespace {

/// An offer of `m`'s fields and `entries` (m.entries are not read), with
/// `after_entry()` after each entry and each entry's details.
template <class Entries, class AfterEntry>
void put_offer(ByteWriter& w, const Offer& m, const Entries& entries, AfterEntry&& after_entry) {
  w.u32(m.transfer_id);
  w.u8(static_cast<uint8_t>(m.hash));
  w.u64(m.chunk_size);
  put_entries(w, entries, after_entry);
  w.u8(offer_flags(m));
  put_details(w, entries, after_entry);
  // Protocol 8; nothing when no backup is asked, so such an offer is a
  // protocol-7 one. Protocol 9's options byte follows them (then always there).
  if (m.sync.backup() || m.early_answers || m.verdicts_apart) {
    w.bytes(m.sync.backup_suffix);
    w.bytes(m.sync.backup_dir);
  }
  if (m.early_answers || m.verdicts_apart)
    w.u8((m.early_answers ? kOfferEarlyAnswers | (m.ordered ? kOfferOrdered : 0) : 0) |
         (m.verdicts_apart ? kOfferVerdictsApart : 0));
}

/// encode_streamed hands its bytes on from this many: a few hundred
/// entries' worth, so the sink's calls are few and the buffer small.
constexpr size_t kStreamedPieceBytes = 64 * 1024;

}  // namespace

void encode(const Offer& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  put_offer(w, m, m.entries, [] {});
}

void encode_streamed(const Offer& m, const ByteSink& sink) { encode_streamed(m, m.entries, sink); }

namespace {

template <class Entries>
void encode_offer_streamed(const Offer& fields, const Entries& entries, const ByteSink& sink) {
  std::vector<uint8_t> piece;
  piece.reserve(kStreamedPieceBytes + 2 * kMaxPathBytes + 64);
  ByteWriter w(piece);
  put_offer(w, fields, entries, [&] {
    if (piece.size() < kStreamedPieceBytes) return;
    sink(piece);
    piece.clear();
  });
  if (!piece.empty()) sink(piece);
}

}  // namespace

void encode_streamed(const Offer& fields, std::span<const ManifestEntry> entries, const ByteSink& sink) {
  encode_offer_streamed(fields, entries, sink);
}

void encode_streamed(const Offer& fields, const EntryParts& entries, const ByteSink& sink) {
  encode_offer_streamed(fields, entries, sink);
}

void encode(const AcceptFiles& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.transfer_id);
  put_decisions(w, m.files);
}

void encode(const AcceptPart& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.transfer_id);
  w.u32(m.entries);
}

void encode(const OfferPart& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.transfer_id);
  w.u32(m.first_entry);
  w.u8(m.last ? 1 : 0);
  put_entries(w, m.entries, [] {});
  put_details(w, m.entries, [] {});
}

void encode_entry(const ManifestEntry& e, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  const std::span<const ManifestEntry> one(&e, 1);
  put_entries(w, one, [] {});
  put_details(w, one, [] {});
}

void encode(const Accept& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.transfer_id);
  const size_t n = std::min(m.held.size(), kMaxHeldRanges);
  w.u32(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) {
    w.u64(m.held[i].offset);
    w.u64(m.held[i].length);
    put_digest(w, m.held[i].hash);
  }
  put_decisions(w, m.files);
  w.u32(m.extraneous_count);
  const size_t listed = std::min(m.extraneous.size(), kMaxListedExtraneous);
  w.u32(static_cast<uint32_t>(listed));
  for (size_t i = 0; i < listed; ++i) w.bytes(m.extraneous[i].substr(0, kMaxPathBytes));
}

void encode(const Refuse& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.transfer_id);
  w.u8(static_cast<uint8_t>(m.reason));
  w.bytes(m.message.substr(0, kMaxReasonLength));
}

void encode(const PieceAbort& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.transfer_id);
  w.u32(m.piece);
}

void encode(const Ack& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.transfer_id);
  w.u32(m.piece);
  w.u64(m.recv_duration_ns);
  w.u8(static_cast<uint8_t>(m.status));
}

void encode(const LaneClosed& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.lane_id);
  w.bytes(m.reason.substr(0, kMaxReasonLength));
}

void encode(const Done& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.transfer_id);
  put_digest(w, m.root);
}

void encode(const TransferResult& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.transfer_id);
  w.u8(static_cast<uint8_t>(m.status));
  w.bytes(m.message.substr(0, kMaxReasonLength));
}

void encode(const ErrorMessage& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u8(m.code);
  w.bytes(m.message.substr(0, kMaxReasonLength));
}

void encode(const Bye& m, std::vector<uint8_t>& out) {
  if (!m.after_transfer) return;  // protocol 7's bye: no payload
  ByteWriter w(out);
  w.u32(*m.after_transfer);
}

void encode(const Cancel& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.transfer_id);
  w.bytes(m.reason.substr(0, kMaxReasonLength));
}

void encode_piece_header(const PieceHeader& h, std::span<uint8_t, PieceHeader::kSize> out) {
  // Written into a small vector first would cost an allocation per frame on
  // the hot path; this writes the fixed layout straight into place.
  auto put = [&](size_t at, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * (n - 1 - i)));
  };
  put(0, h.transfer_id, 4);
  put(4, h.piece, 4);
  put(8, h.chunk, 4);
  out[12] = h.flags;
  out[13] = h.hash.size;
  out[14] = out[15] = 0;
  put(16, h.piece_offset, 8);
  put(24, h.piece_length, 8);
  put(32, h.data_offset, 8);
  std::copy(h.hash.bytes.begin(), h.hash.bytes.end(), out.begin() + 40);
}

// ---- decode -------------------------------------------------------------------

bool decode(std::span<const uint8_t> in, LaneJoin& m) {
  ByteReader r(in);
  m.version = r.u32();
  m.lane_id = r.u32();
  return finish(r);
}

bool decode(std::span<const uint8_t> in, LaneWelcome& m) {
  ByteReader r(in);
  m.lane_id = r.u32();
  return finish(r);
}

bool decode(std::span<const uint8_t> in, Addresses& m) {
  ByteReader r(in);
  const uint32_t n = r.u32();
  if (n > kMaxAddresses) return false;
  m.endpoints.clear();
  m.protocol = 0;
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    std::string e = r.bytes(64);
    if (e.rfind(kProtocolToken, 0) != 0) {
      m.endpoints.push_back(std::move(e));
      continue;
    }
    // "braid-protocol=N": last (where encode puts it: one encoding per
    // message), N a plain decimal number from 1 (no sign, no leading zero).
    const std::string_view v = std::string_view(e).substr(kProtocolToken.size());
    if (i + 1 != n || v.empty() || v.size() > 9 || v[0] == '0' ||
        v.find_first_not_of("0123456789") != std::string_view::npos)
      return false;
    for (char d : v) m.protocol = m.protocol * 10 + static_cast<uint32_t>(d - '0');
  }
  return finish(r);
}

bool decode(std::span<const uint8_t> in, Offer& m) {
  ByteReader r(in);
  m.transfer_id = r.u32();
  const uint8_t hash = r.u8();
  if (hash != static_cast<uint8_t>(HashAlgo::xxh3_128) && hash != static_cast<uint8_t>(HashAlgo::sha256)) return false;
  m.hash = static_cast<HashAlgo>(hash);
  m.chunk_size = r.u64();
  uint64_t total = 0;
  if (!get_entries(r, m.entries, total)) return false;
  m.discard = false;
  m.continued = false;
  m.sync = {};
  m.early_answers = false;
  m.ordered = false;
  m.verdicts_apart = false;
  m.version = kProtocolVersion;
  if (r.ok() && r.at_end()) {  // no flags byte: a sender of protocol 3
    m.version = 3;
    return true;
  }
  const uint8_t flags = r.u8();
  if (flags & ~kOfferFlagsKnown) return false;
  m.discard = flags & kOfferDiscard;
  m.continued = flags & kOfferContinued;
  m.sync = sync_from_flags(flags);
  if (r.ok() && r.at_end()) {  // no entry details: a sender of protocol 4
    m.version = 4;
    return !m.continued;
  }
  if (!get_details(r, m.entries)) return false;
  if (r.ok() && !r.at_end()) {  // the backup options (protocol 8)
    m.sync.backup_suffix = r.bytes(kMaxBackupSuffixBytes);
    m.sync.backup_dir = r.bytes(kMaxPathBytes);
    const std::string& x = m.sync.backup_suffix;
    if (x.find('/') != std::string::npos || x.find('\0') != std::string::npos ||
        m.sync.backup_dir.find('\0') != std::string::npos)
      return false;
    // Empty backup options only in front of the options byte (protocol 9).
    if (r.ok() && !r.at_end()) {
      const uint8_t options = r.u8();
      m.early_answers = options & kOfferEarlyAnswers;
      m.ordered = options & kOfferOrdered;
      m.verdicts_apart = options & kOfferVerdictsApart;
      // A bit of its own at least; the order only with early answers, which
      // only a continued offer asks for.
      if ((options & ~(kOfferEarlyAnswers | kOfferOrdered | kOfferVerdictsApart)) || (!m.early_answers && !m.verdicts_apart) ||
          (m.ordered && !m.early_answers) || (m.early_answers && !m.continued))
        return false;
    } else if (!m.sync.backup()) {
      return false;
    }
  }
  return finish(r);
}

bool decode(std::span<const uint8_t> in, AcceptFiles& m) {
  ByteReader r(in);
  m.transfer_id = r.u32();
  return get_decisions(r, m.files) && !m.files.empty() && finish(r);
}

bool decode(std::span<const uint8_t> in, AcceptPart& m) {
  ByteReader r(in);
  m.transfer_id = r.u32();
  m.entries = r.u32();
  return r.ok() && m.entries >= 1 && finish(r);
}

bool decode(std::span<const uint8_t> in, OfferPart& m) {
  ByteReader r(in);
  m.transfer_id = r.u32();
  m.first_entry = r.u32();
  const uint8_t flags = r.u8();
  if (!r.ok() || flags > 1) return false;
  m.last = flags == 1;
  uint64_t total = 0;  // this part's own sum; the whole offer's is checked by append_offer_part
  if (!get_entries(r, m.entries, total) || m.entries.empty()) return false;
  if (uint64_t{m.first_entry} + m.entries.size() > kMaxOfferEntries) return false;
  return get_details(r, m.entries, m.first_entry) && finish(r);
}

bool decode(std::span<const uint8_t> in, Accept& m) {
  ByteReader r(in);
  m.transfer_id = r.u32();
  const uint32_t n = r.u32();
  constexpr size_t kSmallestRange = 8 + 8 + 1 + 16;
  if (!r.ok() || n > kMaxHeldRanges || n > r.remaining() / kSmallestRange) return false;
  m.held.clear();
  m.held.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    HeldRange h;
    h.offset = r.u64();
    h.length = r.u64();
    get_digest(r, h.hash);
    if (h.length == 0 || h.offset > UINT64_MAX - h.length) return false;
    m.held.push_back(h);
  }
  if (!get_decisions(r, m.files)) return false;
  m.extraneous_count = r.u32();
  const uint32_t listed = r.u32();
  if (!r.ok() || listed > kMaxListedExtraneous || listed > m.extraneous_count || listed > r.remaining() / 4)
    return false;
  m.extraneous.clear();
  for (uint32_t i = 0; i < listed && r.ok(); ++i) m.extraneous.push_back(r.bytes(kMaxPathBytes));
  return finish(r);
}

bool decode(std::span<const uint8_t> in, Refuse& m) {
  ByteReader r(in);
  m.transfer_id = r.u32();
  const uint8_t reason = r.u8();
  if (reason < 1 || reason > static_cast<uint8_t>(RefuseReason::busy)) return false;
  m.reason = static_cast<RefuseReason>(reason);
  m.message = r.bytes(kMaxReasonLength);
  return finish(r);
}

bool decode(std::span<const uint8_t> in, PieceAbort& m) {
  ByteReader r(in);
  m.transfer_id = r.u32();
  m.piece = r.u32();
  return finish(r);
}

bool decode(std::span<const uint8_t> in, Ack& m) {
  ByteReader r(in);
  m.transfer_id = r.u32();
  m.piece = r.u32();
  m.recv_duration_ns = r.u64();
  const uint8_t st = r.u8();
  if (st > 2) return false;
  m.status = static_cast<AckStatus>(st);
  return finish(r);
}

bool decode(std::span<const uint8_t> in, LaneClosed& m) {
  ByteReader r(in);
  m.lane_id = r.u32();
  m.reason = r.bytes(kMaxReasonLength);
  return finish(r);
}

bool decode(std::span<const uint8_t> in, Done& m) {
  ByteReader r(in);
  m.transfer_id = r.u32();
  get_digest(r, m.root);
  return finish(r);
}

bool decode(std::span<const uint8_t> in, TransferResult& m) {
  ByteReader r(in);
  m.transfer_id = r.u32();
  const uint8_t st = r.u8();
  if (st > 4) return false;
  m.status = static_cast<ResultStatus>(st);
  m.message = r.bytes(kMaxReasonLength);
  return finish(r);
}

bool decode(std::span<const uint8_t> in, ErrorMessage& m) {
  ByteReader r(in);
  m.code = r.u8();
  m.message = r.bytes(kMaxReasonLength);
  return finish(r);
}

bool decode(std::span<const uint8_t> in, Bye& m) {
  m.after_transfer.reset();
  if (in.empty()) return true;
  ByteReader r(in);
  m.after_transfer = r.u32();
  return finish(r);
}

bool decode(std::span<const uint8_t> in, Cancel& m) {
  ByteReader r(in);
  m.transfer_id = r.u32();
  m.reason = r.bytes(kMaxReasonLength);
  return finish(r);
}

bool decode_piece_header(std::span<const uint8_t> payload, PieceHeader& h, size_t& data_length) {
  if (payload.size() < PieceHeader::kSize) return false;
  data_length = payload.size() - PieceHeader::kSize;
  return decode_piece_header(payload, data_length, h);
}

bool decode_piece_header(std::span<const uint8_t> header, size_t data_length, PieceHeader& h) {
  if (header.size() < PieceHeader::kSize) return false;
  ByteReader r(header.first(PieceHeader::kSize));
  h.transfer_id = r.u32();
  h.piece = r.u32();
  h.chunk = r.u32();
  h.flags = r.u8();
  h.hash.size = r.u8();
  (void)r.u16();
  h.piece_offset = r.u64();
  h.piece_length = r.u64();
  h.data_offset = r.u64();
  r.raw(h.hash.bytes);
  if (!r.ok()) return false;
  if ((h.flags & ~(PieceHeader::kLast | PieceHeader::kCompressed)) != 0) return false;
  if (h.last() ? !valid_digest_size(h.hash.size) : h.hash.size != 0) return false;
  // The frame's bytes must lie inside the piece, without overflow.
  if (h.piece_offset > UINT64_MAX - h.piece_length) return false;
  if (h.data_offset < h.piece_offset || h.data_offset - h.piece_offset > h.piece_length) return false;
  if (data_length > h.piece_offset + h.piece_length - h.data_offset) return false;
  // A compressed frame's file bytes are known once it is decompressed.
  if (h.last() && !h.compressed() && h.data_offset + data_length != h.piece_offset + h.piece_length) return false;
  return true;
}

// ---- UDP lanes -------------------------------------------------------------------

void encode(const UdpOpen& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.lane_id);
  w.bytes(m.address.substr(0, kMaxReasonLength));
}

void encode(const UdpReady& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.lane_id);
  w.bytes(m.address.substr(0, kMaxReasonLength));
  w.bytes(m.error.substr(0, kMaxReasonLength));
}

void encode(const UdpPiece& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.lane_id);
  w.u32(m.transfer_id);
  w.u32(m.piece);
  w.u32(m.chunk);
  w.u64(m.piece_offset);
  w.u64(m.piece_length);
  put_digest(w, m.hash);
}

void encode(const LaneAck& m, std::vector<uint8_t>& out) {
  ByteWriter w(out);
  w.u32(m.lane_id);
  encode(m.ack, out);
}

bool decode(std::span<const uint8_t> in, UdpOpen& m) {
  ByteReader r(in);
  m.lane_id = r.u32();
  m.address = r.bytes(kMaxReasonLength);
  return finish(r);
}

bool decode(std::span<const uint8_t> in, UdpReady& m) {
  ByteReader r(in);
  m.lane_id = r.u32();
  m.address = r.bytes(kMaxReasonLength);
  m.error = r.bytes(kMaxReasonLength);
  return finish(r);
}

bool decode(std::span<const uint8_t> in, UdpPiece& m) {
  ByteReader r(in);
  m.lane_id = r.u32();
  m.transfer_id = r.u32();
  m.piece = r.u32();
  m.chunk = r.u32();
  m.piece_offset = r.u64();
  m.piece_length = r.u64();
  get_digest(r, m.hash);
  if (!finish(r)) return false;
  return valid_digest_size(m.hash.size) && m.piece_offset <= UINT64_MAX - m.piece_length;
}

bool decode(std::span<const uint8_t> in, LaneAck& m) {
  if (in.size() < 4) return false;
  ByteReader r(in.first(4));
  m.lane_id = r.u32();
  return r.ok() && decode(in.subspan(4), m.ack);
}

}  // namespace braid::wire
