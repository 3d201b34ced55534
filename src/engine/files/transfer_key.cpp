#include "engine/files/transfer_key.hpp"

#include "engine/files/piece_hasher.hpp"

namespace braid::files {

std::string TransferKey::tag() const {
  wire::Digest d;
  d.size = 8;
  std::copy(bytes.begin(), bytes.begin() + 8, d.bytes.begin());
  return d.hex();
}

namespace {

template <class Entries>
TransferKey key_of(const wire::Offer& offer, const Entries& entries, std::span<const uint8_t> sender_identity,
                   std::span<const uint32_t> kept) {
  // The offer's fields without its entries, which are encoded in place:
  // neither a copy of them nor their whole encoding is held (a big tree's
  // entries take hundreds of MB; issue 18).
  wire::Offer fields = wire::offer_fields(offer);
  fields.transfer_id = 0;  // the same files offered in another session find the same key
  // How the offer is answered (part by part, protocol 9, or whole) is no
  // part of what it offers: a run that asks and one that does not find the
  // same journal.
  fields.early_answers = false;
  PieceHasher h(wire::HashAlgo::sha256);
  wire::encode_streamed(fields, entries, [&h](std::span<const uint8_t> piece) { h.update(piece); });
  // Length-prefixed, so no offer's bytes can imitate another identity.
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
  TransferKey k;
  std::copy(d.bytes.begin(), d.bytes.begin() + 32, k.bytes.begin());
  return k;
}

}  // namespace

TransferKey transfer_key(const wire::Offer& offer, std::span<const uint8_t> sender_identity,
                         std::span<const uint32_t> kept) {
  return key_of(offer, std::span<const wire::ManifestEntry>(offer.entries), sender_identity, kept);
}

TransferKey transfer_key(const wire::Offer& fields, const wire::EntryParts& entries,
                         std::span<const uint8_t> sender_identity) {
  return key_of(fields, entries, sender_identity, {});
}

}  // namespace braid::files
