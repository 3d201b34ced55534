#include "pairing_proof.h"

#include <openssl/crypto.h>


#include "kdf.h"

namespace braid::security {

Result<PairingKey> derive_pairing_key(const PairingCode& code) {
  PairingKey key;
  if (Status s = hkdf_sha256(as_bytes(code.canonical()), as_bytes("braid pairing v1"), as_bytes("braid pairing key"),
                             key.span());
      !s)
    return s.error();
  return key;
}

Result<PairingProof> make_pairing_proof(const PairingKey& key, Role prover,
                                        std::span<const std::uint8_t, kChannelBindingSize> channel_binding,
                                        const Fingerprint& client, const Fingerprint& server) {
  // Fixed layout, no allocation: label || role || binding || client fp || server fp.
  constexpr std::string_view kLabel = "braid pairing proof v1";
  std::array<std::uint8_t, kLabel.size() + 6 + kChannelBindingSize + 2 * Fingerprint::kSize> msg{};
  std::size_t at = 0;
  auto append = [&](std::span<const std::uint8_t> b) {
    std::copy(b.begin(), b.end(), msg.begin() + static_cast<std::ptrdiff_t>(at));
    at += b.size();
  };
  append(as_bytes(kLabel));
  append(as_bytes(prover == Role::client ? "client" : "server"));
  append(channel_binding);
  append(client.bytes());
  append(server.bytes());
  PairingProof proof{};
  if (Status s = hmac_sha256(key.span(), msg, proof); !s) return s.error();
  return proof;
}

bool pairing_proofs_equal(const PairingProof& a, const PairingProof& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace braid::security
