// Sync, the decisions both ends make the same way (docs/engine.md, "Sync"):
// which offered files the receiver keeps as they are, which it updates from
// the version it has, and how the kept files' bytes count in the transfer's
// byte space. Pure: the engine stats the files and reads the old versions;
// these functions only decide.
//
// A kept file (verdicts unchanged, newer_here, exists_here) stays in the
// transfer's byte space — offsets do not move, so the chunk plan, resume and
// the root hash work as for any transfer — but its bytes are delivered
// without being sent: both machines count its range as records without a
// hash (`kept_records`), cut at chunk boundaries as the scheduler cuts
// resumed ranges. A file the receiver has an older version of
// (older_here) is sent as usual, less the chunks whose hash the receiver's
// copy matches: those come as held ranges, which the sender checks against
// its own bytes like a resume's.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/wire/entry_parts.hpp"
#include "core/wire/messages.hpp"

namespace braid::session::sync {

/// What the receiver found at an offered file's final place (lstat: a link
/// is not followed).
struct Existing {
  enum class Kind { none, file, other } kind = Kind::none;
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  uint32_t mtime_nsec = 0;
};

/// The receiver's verdict on one offered entry; nullopt: send it whole (it
/// is new there, not a regular file, or sync is off). rsync's rules:
/// --ignore-existing skips whatever exists; --update skips a file whose
/// mtime is later on the receiver; otherwise the quick check (same size and
/// same mtime, to the nanosecond) says unchanged unless --checksum, and a
/// regular file that fails it is older_here (its chunks are compared). A
/// hard link (ManifestEntry::hard_link_to) has no verdict: it is linked again.
std::optional<wire::FileVerdict> decide(const wire::ManifestEntry& entry, const Existing& there,
                                        const wire::SyncOptions& opts);

/// The verdict keeps the receiver's file as it is (no byte of it is sent).
inline bool keeps(wire::FileVerdict v) { return v != wire::FileVerdict::older_here; }

/// A range of the transfer's byte space.
struct Span {
  uint64_t offset = 0;
  uint64_t length = 0;
  bool operator==(const Span&) const = default;
};

/// Where each entry starts in the transfer's byte space (regular files laid
/// end to end in offer order; other entries take no bytes).
std::vector<uint64_t> entry_offsets(std::span<const wire::ManifestEntry> entries);
inline std::vector<uint64_t> entry_offsets(const wire::Offer& offer) { return entry_offsets(offer.entries); }

/// The records of what is delivered without being sent, without hashes:
/// the files `files` keeps, and the holes of the other sparse files
/// (ManifestEntry::data, `braid send -S`); consecutive ranges merged, then
/// cut at every chunk boundary, in offset order. Both ends compute them from
/// the offer and the accept; the root hash covers them as (offset, length)
/// only (a hole's place is in the offer, hence in the transfer key).
/// (The offer's fields it needs given apart: a sender that reads its
/// entries in place has no Offer holding them.)
std::vector<wire::HeldRange> kept_records(std::span<const wire::ManifestEntry> entries, uint64_t chunk_size,
                                          const std::vector<wire::FileDecision>& files);
inline std::vector<wire::HeldRange> kept_records(const wire::Offer& offer, const std::vector<wire::FileDecision>& files) {
  return kept_records(offer.entries, offer.chunk_size, files);
}
/// Consecutive ranges, in offset order, merged and cut at every chunk
/// boundary: what kept_records makes of the ranges it finds.
class RangeCutter {
 public:
  explicit RangeCutter(uint64_t chunk_size) : chunk_(chunk_size) {}
  /// The next range (at or after the last one's end); records it completes join `out`.
  void add(uint64_t at, uint64_t n, std::vector<wire::HeldRange>& out);
  /// The last range's records join `out`.
  void finish(std::vector<wire::HeldRange>& out);

 private:
  uint64_t chunk_;
  std::optional<Span> run_;
};

/// An offer answered part by part (no verdicts: its kept records are the
/// holes), as its entries come: the receiver lets go of them as it goes
/// (issue 18) and gets the records kept_records would give of them all.
class HoleRecords {
 public:
  explicit HoleRecords(uint64_t chunk_size) : cut_(chunk_size) {}
  /// The next entries, in order; the records they complete join `out`
  /// (a hole at their end may still run on into the next ones).
  void add(std::span<const wire::ManifestEntry> entries, std::vector<wire::HeldRange>& out);
  /// No more entries: the last records join `out`.
  void finish(std::vector<wire::HeldRange>& out) { cut_.finish(out); }
  /// Bytes of every hole so far (hole_bytes).
  uint64_t bytes() const { return bytes_; }
  /// The transfer offset past the entries so far: their files' bytes.
  uint64_t end() const { return at_; }

 private:
  RangeCutter cut_;
  uint64_t at_ = 0;  // transfer offset of the next entry
  uint64_t bytes_ = 0;
};
/// The hole records (kept_records with no verdicts) that lie within
/// [from, to), both chunk boundaries, of `entries`, the first of which
/// begins at transfer offset `start` (<= from; the entries before it end
/// at or before `from`). An offer answered part by part grows its plan by
/// whole chunks of the accepted entries, and each record lies in one chunk,
/// so those of [from, to) are final once the entries reach `to`: the same
/// records kept_records finds over the whole offer.
std::vector<wire::HeldRange> holes_between(std::span<const wire::ManifestEntry> entries, uint64_t start,
                                           uint64_t chunk_size, uint64_t from, uint64_t to);

/// Bytes of the holes among kept_records: those of the files not kept.
uint64_t hole_bytes(const std::vector<wire::ManifestEntry>& entries, const std::vector<wire::FileDecision>& files);

/// The ranges of a file at transfer offset `start`, `size` bytes now, whose
/// version on the receiver has `old_size` bytes, that the old version may
/// hold at the same place: the bytes both versions have, cut at the
/// transfer's chunk boundaries (so each lies in one chunk, as the sender's
/// check of held ranges asks).
/// With `data` (a sparse file's data ranges, ManifestEntry::data), only the
/// parts of those spans that are data: holes are delivered as kept records.
std::vector<Span> reusable_spans(uint64_t start, uint64_t size, uint64_t old_size, uint64_t chunk_size,
                                 const wire::Boxed<std::vector<wire::DataRange>>& data = {});

/// Empty if the receiver's verdicts fit the offer (each names a regular file
/// of it, in order, none on a transfer without sync), else why not.
std::string check_decisions(std::span<const wire::ManifestEntry> entries, bool sync,
                            const std::vector<wire::FileDecision>& files);
inline std::string check_decisions(const wire::Offer& offer, const std::vector<wire::FileDecision>& files) {
  return check_decisions(offer.entries, offer.sync.sync, files);
}

/// Files by what the sync did with them, for the reports.
struct Tally {
  uint64_t files_sent = 0;       // new on the receiver: sent whole
  uint64_t files_unchanged = 0;  // size and mtime (or every chunk, --checksum) matched: nothing sent
  uint64_t files_skipped = 0;    // --update (newer there) or --ignore-existing
  uint64_t files_updated = 0;    // an older version there: only the differing chunks sent
  uint64_t kept_bytes = 0;       // bytes of the kept files (unchanged + skipped)
  uint64_t hole_bytes = 0;       // holes of the other sparse files (-S): delivered unsent, like kept files
};
/// `reused` (sorted by offset, disjoint): the held ranges the sender kept.
/// An older_here file they cover whole (every chunk matched, --checksum on
/// an unchanged file) counts as unchanged: nothing of it was sent.
Tally tally(const wire::Offer& offer, const std::vector<wire::FileDecision>& files,
            const std::vector<wire::HeldRange>& reused = {});

}  // namespace braid::session::sync
