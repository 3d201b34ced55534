// What names one transfer's content across runs, so that an interrupted
// transfer offered again finds its temporary files and resume journal, and
// anything else — another file set, another chunk size or hash, another
// sender — never reuses them.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "core/wire/messages.hpp"
#include "engine/files/piece_hasher.hpp"

namespace braid::files {

struct TransferKey {
  /// SHA-256 over the offer without its transfer id (hash algorithm, chunk
  /// size, every entry: kind, path, size, mode, mtime, link target) and the
  /// sender's identity (its public key's fingerprint).
  std::array<uint8_t, 32> bytes{};
  bool operator==(const TransferKey&) const = default;
  /// 16 hex digits: the part of the key in file names (".braid-<tag>-…").
  /// The journal keeps the whole key and checks it.
  std::string tag() const;
};

// Two versions of the key name journals. The first (transfer_key) hashes
// the offer's encoding, whose entry count comes first and whose entries'
// details follow all the entries: only a whole manifest held at once can
// give it. The second (RunningKey, every journal made since session 26)
// hashes each entry as it comes, then the count and the offer's fields, so
// a receiver answering part by part can let go of the entries it wrote
// (issue 18). A run looks for a journal under both (the first's are those
// an older braid left), and makes a new one under the second.

/// `kept` (sync): the offer's files the receiver keeps as they are. They
/// have no temporary file, so a run that keeps others must not take this
/// run's journal for its own: the set is part of the key.
TransferKey transfer_key(const wire::Offer& offer, std::span<const uint8_t> sender_identity,
                         std::span<const uint32_t> kept = {});
/// The second key, over the entries in order as they come (in any parts:
/// each entry is hashed alone, wire::encode_entry), then their count, the
/// offer's fields (transfer id 0, answered part by part or whole and
/// continued or not alike: how it is sent is no part of what it offers),
/// the sender's identity and the kept entries, as the first.
class RunningKey {
 public:
  RunningKey();
  /// The next entries, after every one added before.
  void add(std::span<const wire::ManifestEntry> entries);
  size_t entries() const { return count_; }
  /// `fields`' entries are not read: they are the ones added.
  TransferKey finish(const wire::Offer& fields, std::span<const uint8_t> sender_identity,
                     std::span<const uint32_t> kept = {});

 private:
  PieceHasher hash_;
  std::vector<uint8_t> pending_;  // encoded entries not hashed yet (hashed some 64 KiB at a time)
  size_t count_ = 0;
};

/// The second key of a whole offer.
TransferKey running_transfer_key(const wire::Offer& offer, std::span<const uint8_t> sender_identity,
                                 std::span<const uint32_t> kept = {});

}  // namespace braid::files
