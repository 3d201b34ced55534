#include "engine/files/transfer_key.hpp"

#include "core/wire/byte_codec.hpp"
#include "engine/files/piece_hasher.hpp"

namespace braid::files {

std::string TransferKey::tag() const {
  wire::Digest d;
  d.size = 8;
  std::copy(bytes.begin(), bytes.begin() + 8, d.bytes.begin());
  return d.hex();
}

namespace {

/// The identity, length-prefixed (so no offer's bytes can imitate another
/// identity), then the kept entries, into `h`; the key.
TransferKey sealed_key(PieceHasher& h, std::span<const uint8_t> sender_identity, std::span<const uint32_t> kept) {
  const uint8_t n = static_cast<uint8_t>(std::min<size_t>(sender_identity.size(), 255));
  h.update(std::span<const uint8_t>(&n, 1));
  h.update(sender_identity.first(n));
  if (!kept.empty()) {
    std::vector<uint8_t> ids;
    for (const uint32_t k : kept)
      for (int i = 3; i >= 0; --i) ids.push_back(static_cast<uint8_t>(k >> (8 * i)));
    h.update(ids);
  }
  const wire::Digest d = h.finish();
  TransferKey key;
  std::copy(d.bytes.begin(), d.bytes.begin() + 32, key.bytes.begin());
  return key;
}

TransferKey key_of(const wire::Offer& offer, std::span<const wire::ManifestEntry> entries,
                   std::span<const uint8_t> sender_identity, std::span<const uint32_t> kept) {
  // The offer's fields without its entries, which are encoded in place:
  // neither a copy of them nor their whole encoding is held (a big tree's
  // entries take hundreds of MB; issue 18).
  wire::Offer fields = wire::offer_fields(offer);
  fields.transfer_id = 0;  // the same files offered in another session find the same key
  // How the offer is answered (part by part, protocol 9, or whole) is no
  // part of what it offers: a run that asks and one that does not find the
  // same journal.
  fields.early_answers = false;
  fields.verdicts_apart = false;  // nor how its verdicts may come (protocol 11)
  PieceHasher h(wire::HashAlgo::sha256);
  wire::encode_streamed(fields, entries, [&h](std::span<const uint8_t> piece) { h.update(piece); });
  return sealed_key(h, sender_identity, kept);
}

}  // namespace

TransferKey transfer_key(const wire::Offer& offer, std::span<const uint8_t> sender_identity,
                         std::span<const uint32_t> kept) {
  return key_of(offer, offer.entries, sender_identity, kept);
}

namespace {
constexpr std::string_view kRunningKeyDomain = "braid transfer key 2";
constexpr size_t kHashFrom = 64 * 1024;  // encoded entries handed to the hash at a time
}  // namespace

RunningKey::RunningKey() : hash_(wire::HashAlgo::sha256) {
  hash_.update(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kRunningKeyDomain.data()), kRunningKeyDomain.size()));
}

void RunningKey::add(std::span<const wire::ManifestEntry> entries) {
  for (const auto& e : entries) {
    wire::encode_entry(e, pending_);
    if (pending_.size() >= kHashFrom) {
      hash_.update(pending_);
      pending_.clear();
    }
  }
  count_ += entries.size();
}

TransferKey RunningKey::finish(const wire::Offer& fields, std::span<const uint8_t> sender_identity,
                               std::span<const uint32_t> kept) {
  wire::Offer f = wire::offer_fields(fields);
  f.transfer_id = 0;
  f.early_answers = false;
  f.continued = false;
  f.ordered = false;
  f.verdicts_apart = false;
  wire::ByteWriter(pending_).u64(count_);
  wire::encode(f, pending_);
  hash_.update(pending_);
  pending_.clear();
  return sealed_key(hash_, sender_identity, kept);
}

TransferKey running_transfer_key(const wire::Offer& offer, std::span<const uint8_t> sender_identity,
                                 std::span<const uint32_t> kept) {
  RunningKey k;
  k.add(offer.entries);
  return k.finish(offer, sender_identity, kept);
}

}  // namespace braid::files
