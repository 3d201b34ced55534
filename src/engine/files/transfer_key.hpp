// What names one transfer's content across runs, so that an interrupted
// transfer offered again finds its temporary files and resume journal, and
// anything else — another file set, another chunk size or hash, another
// sender — never reuses them.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "core/wire/entry_parts.hpp"
#include "core/wire/messages.hpp"

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

/// `kept` (sync): the offer's files the receiver keeps as they are. They
/// have no temporary file, so a run that keeps others must not take this
/// run's journal for its own: the set is part of the key.
TransferKey transfer_key(const wire::Offer& offer, std::span<const uint8_t> sender_identity,
                         std::span<const uint32_t> kept = {});
/// The same key for an offer of `fields`' fields whose entries are `entries`
/// (an offer answered part by part keeps them as the parts they came in).
TransferKey transfer_key(const wire::Offer& fields, const wire::EntryParts& entries,
                         std::span<const uint8_t> sender_identity);

}  // namespace braid::files
