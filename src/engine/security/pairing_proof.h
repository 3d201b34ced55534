// Proof of knowledge of the pairing code, bound to one TLS channel.
//
//   K      = HKDF-SHA256(ikm = code (24 canonical symbols), salt = "braid pairing v1", info = "braid pairing key")
//   proof  = HMAC-SHA256(K, "braid pairing proof v1" || role ("client"|"server")
//                           || channel binding (TLS exporter, 32 bytes)
//                           || client fingerprint || server fingerprint)
//
// The exporter ties the proof to this TLS session (a proof cannot be relayed
// to another connection: a man in the middle has two TLS sessions with two
// different exporter values); the fingerprints tie it to the two keys that
// will be pinned; the role keeps one side's proof from being reflected back
// as the other's. See docs/security.md for why a 115-bit code makes
// offline guessing from an observed proof hopeless.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "fingerprint.h"
#include "lane_keys.h"
#include "pairing_code.h"
#include "result.h"
#include "secret.h"

namespace braid::security {

using PairingKey = Secret<32>;
using PairingProof = std::array<std::uint8_t, 32>;
constexpr std::size_t kChannelBindingSize = 32;

Result<PairingKey> derive_pairing_key(const PairingCode& code);

Result<PairingProof> make_pairing_proof(const PairingKey& key, Role prover,
                                        std::span<const std::uint8_t, kChannelBindingSize> channel_binding,
                                        const Fingerprint& client, const Fingerprint& server);

// Constant time, so a timing side channel tells nothing about the proof.
bool pairing_proofs_equal(const PairingProof& a, const PairingProof& b);

}  // namespace braid::security
