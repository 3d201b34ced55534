// The receiver's resume journal: one small hidden file per transfer in the
// target directory, ".braid-resume-<tag>" (tag: TransferKey::tag), that
// lists the byte ranges whose bytes are verified *and durable* in the
// transfer's temporary files, each with its piece hash.
//
// Layout (every integer big endian):
//   header, 72 bytes: "braidres", u32 format 1, u8 hash algorithm, 3 × 0,
//           u64 chunk size, u64 transfer bytes, 32-byte key, u64 check;
//           or 80 bytes, format 2: the same with the 8-byte tag of the
//           temporary files before the check, when they are not named by
//           the key's tag (an offer answered part by part, protocol 9: its
//           files were made before its whole offer, and so its key, was known)
//           or 88 bytes, format 3: the parts tag (the key's own when the
//           files are named by it) and the 8-byte origin (JournalParams::origin)
//           before the check
//   records, 64 bytes each, appended: u8 kind (1 held, 2 revoked),
//           u8 hash size, 6 × 0, u64 offset, u64 length, 32-byte hash,
//           u64 check
// `check` is the first 8 bytes of XXH3-128 over what precedes it in the
// header or record. Reading stops at the first record that does not check
// (a torn append) and cuts the file there, so nothing after it can come
// back. A held record claims its range (a later one overlapping it wins:
// its bytes were written last); a revoked record ends every claim it
// overlaps (the receiver is about to write there).
//
// The writer's rule, which makes a crash lose progress but never claim
// bytes that are not on disk: a held record is appended only after the
// range's bytes were fdatasync'ed; a revoked record is durable before any
// byte is written over a held range. Both appends end with fdatasync.
//
// The file is locked (flock) while open, so a second braid process that is
// offered the same transfer learns it is busy instead of writing the same
// temporary files.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <variant>
#include <vector>

#include "engine/files/held_ranges.hpp"
#include "engine/files/piece_hasher.hpp"
#include "engine/files/transfer_key.hpp"
#include "engine/security/unique_fd.h"

namespace braid::files {

struct JournalParams {
  TransferKey key;
  wire::HashAlgo hash = wire::HashAlgo::xxh3_128;
  uint64_t chunk_size = 0;
  uint64_t total = 0;
  /// The tag the transfer's temporary files are named by (ReceiveTree's
  /// PrepareOptions::tag), 16 hex digits. Empty: open() takes the one the
  /// journal names (the key's tag if it names none); set: a journal that
  /// names another starts over, and this one is written.
  std::string parts_tag = {};
  /// Who sent the transfer and how its offer begins (ResumeJournal::origin_of),
  /// 16 hex digits: a receiver asked to answer a new offer part by part
  /// (before its whole key is known) looks only for journals of the same
  /// origin, or of none recorded (formats 1 and 2). Empty: none recorded.
  std::string origin = {};
};

struct JournalError {
  bool busy = false;  // another process holds it
  std::string message;
};

class ResumeJournal {
 public:
  static constexpr size_t kHeaderSize = 72;  // format 1; format 2 adds the 8-byte parts tag
  static constexpr size_t kRecordSize = 64;

  static std::string file_name(const TransferKey& key);
  /// Whether `name` is a journal's file name.
  static bool is_journal_name(std::string_view name);
  /// The origin of an offer with the fields of `head` (hash, chunk size)
  /// whose entries begin with `entries`, from `sender_identity` (its key's
  /// fingerprint): the first entry's kind, path, size and mtime. The same
  /// tree sent again by the same sender has the same origin; a journal of
  /// another origin cannot be this transfer's.
  /// `with_mtime` false: the origin as the first format-3 journals recorded it.
  static std::string origin_of(const wire::Offer& head, std::span<const wire::ManifestEntry> entries,
                               std::span<const uint8_t> sender_identity, bool with_mtime = true);
  /// The origin a journal in `dir_fd` records, without opening it for
  /// writing or locking it; nullopt when it records none (an older format)
  /// or cannot be read — either way it may be any transfer's.
  static std::optional<std::string> read_origin(int dir_fd, const std::string& name);
  /// Whether a journal named by `key` stands in `dir_fd` (transfer_key.hpp:
  /// a run looks under both versions of its key).
  static bool exists(int dir_fd, const TransferKey& key);
  /// The key a whole offer's journal in `dir_fd` goes by: the first
  /// version's when a journal named by it stands there (an older braid
  /// left it), else the second's (transfer_key.hpp).
  static TransferKey key_for(int dir_fd, const wire::Offer& offer, std::span<const uint8_t> sender_identity,
                             std::span<const uint32_t> kept = {});

  /// Opens (or creates) and locks the journal in `dir_fd` and reads it. A
  /// journal written for other parameters, or with a broken header, starts
  /// over empty. Room for the records a transfer of these parameters will
  /// append is reserved now, so a disk that fills up later still takes them.
  ///
  /// Locked by another session: waits up to `wait` for it (polling; `cancel`
  /// set stops the wait), then says busy. A session whose sender just died
  /// holds the lock until its last commit — fdatasync of what it received,
  /// tens of milliseconds to a second — so a run of the same command right
  /// after it is not refused. A journal removed or replaced by the session
  /// that held it (the transfer completed, `braid clean`) is opened again
  /// by name, never used as the unlinked file it was.
  static std::variant<std::unique_ptr<ResumeJournal>, JournalError> open(
      int dir_fd, const JournalParams& p, std::chrono::milliseconds wait = std::chrono::milliseconds(0),
      const std::atomic<bool>* cancel = nullptr);
  ~ResumeJournal();  // releases the lock; the file stays unless removed

  /// The ranges the journal claimed when it was opened.
  const HeldRanges& loaded() const { return loaded_; }
  /// The tag the transfer's temporary files are named by (JournalParams::parts_tag).
  std::string parts_tag() const { return params_.parts_tag.empty() ? params_.key.tag() : params_.parts_tag; }
  /// Records dropped while reading (a torn tail and anything after it).
  size_t dropped_records() const { return dropped_; }

  /// Replaces every record with held records for exactly `held`; durable on return. 0 or errno.
  int rewrite(const std::vector<PieceRecord>& held);
  /// Appends held records: call only once the ranges' bytes are durable. 0 or errno.
  int append_held(const std::vector<PieceRecord>& held);
  /// Appends revoked records for these ranges; durable on return. 0 or errno.
  int append_revoked(const std::vector<PieceRecord>& gone);
  /// Deletes the journal (the transfer is complete, or it can no longer be
  /// kept true). Later appends do nothing. true if no journal file is left.
  bool remove();
  bool removed() const { return removed_; }

 private:
  ResumeJournal(int dir_fd, security::UniqueFd fd, const JournalParams& p);
  bool read_all();
  int write_header();
  int append(const std::vector<std::vector<uint8_t>>& records);
  void reserve_room();

  int dir_fd_;
  security::UniqueFd fd_;
  JournalParams params_;
  HeldRanges loaded_;
  uint64_t end_ = 0;  // where the next record goes
  uint64_t header_size_ = kHeaderSize;
  size_t dropped_ = 0;
  bool removed_ = false;
};

}  // namespace braid::files
