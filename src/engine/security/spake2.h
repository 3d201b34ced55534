// SPAKE2 (RFC 9382), ciphersuite SPAKE2-P256-SHA256-HKDF-HMAC, over OpenSSL
// 3's EC API. Pure computation: no I/O, no clock; the caller carries the
// shares and confirmations (session.cpp does, inside TLS).
//
// The two parties share a password scalar w. Party A uses the point M,
// party B the point N (RFC 9382 §3.2, the P-256 values of §6):
//
//   A: x random in [0,p),  pA = x·P + w·M        B: y random in [0,p),  pB = y·P + w·N
//   A: K = x·(pB − w·N)                          B: K = y·(pA − w·M)
//   TT = len(A)‖A ‖ len(B)‖B ‖ len(pA)‖pA ‖ len(pB)‖pB ‖ len(K)‖K ‖ len(w)‖w
//        (len = 8-byte little-endian; points SEC1 uncompressed, 65 bytes;
//         w big-endian, 32 bytes)                                     (§3.3)
//   Ke ‖ Ka   = SHA-256(TT)                                           (§4)
//   KcA ‖ KcB = HKDF-SHA256(ikm Ka, salt nil, info "ConfirmationKeys" ‖ AAD, 32 bytes)
//   cA = HMAC-SHA256(KcA, TT),  cB = HMAC-SHA256(KcB, TT)
//
// (P-256's cofactor h is 1.) A share reveals nothing about w: x·P is
// uniform, so x·P + w·M is uniform whatever w is. A confirmation does depend
// on w, but someone who did not know w when they sent their share can check
// only the one w they put into it (computing K for any other candidate is a
// Diffie-Hellman problem, §7 / the proof RFC 9382 cites): each exchange is
// at most one guess. Hence the rule session.cpp keeps: a confirmation is
// sent only after the peer's share has been received.
//
// Use: Spake2::start(side, context, w) → share() to send; finish(peer share)
// → Spake2Keys with our confirmation to send and verify_peer() for theirs.
// An object finishes once: its secret scalar is wiped by finish, so it can
// never answer two different peer shares (§7: x and y MUST NOT be reused).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "result.h"
#include "secret.h"

namespace braid::security {

constexpr std::size_t kSpake2ScalarSize = 32;  // a scalar mod p (P-256's group order), big-endian
constexpr std::size_t kSpake2ShareSize = 65;   // a SEC1 uncompressed P-256 point: 0x04 ‖ X ‖ Y
constexpr std::size_t kSpake2KeySize = 16;     // Ke, Ka, KcA, KcB: half of SHA-256's output (§4)
constexpr std::size_t kSpake2MacSize = 32;     // HMAC-SHA256

using Spake2Password = Secret<kSpake2ScalarSize>;  // w, already reduced mod p
using Spake2Share = std::array<std::uint8_t, kSpake2ShareSize>;
using Spake2Mac = std::array<std::uint8_t, kSpake2MacSize>;

// w from a password (braid: a pairing code's canonical symbols):
//   w = HKDF-SHA256(ikm = password, salt = "braid pairing v2", info = "braid spake2 w", L = 40 bytes) mod p
// 40 bytes is 64 bits more than p needs, so the reduction's bias is below
// 2^-64 (RFC 9382 §3.2, after NIST SP 800-56A). HKDF rather than a
// memory-hard function, on purpose: SPAKE2 gives an attacker nothing to test
// guesses against offline, so making each guess slower buys nothing, and the
// receiver derives w for every pairing attempt an unauthenticated peer can
// start (a memory-hard function there would be a memory-exhaustion lever).
// docs/security.md, "Session start", has the argument in full.
Result<Spake2Password> spake2_password(std::span<const std::uint8_t> password);

// Who is who, and what both sides bind into the exchange. Identities go
// into TT (and so into Ke and both confirmations), AAD into the
// confirmation keys (RFC 9382 §3.2: at most 2^16 − 128 bits).
struct Spake2Context {
  std::vector<std::uint8_t> identity_a;
  std::vector<std::uint8_t> identity_b;
  std::vector<std::uint8_t> aad;
};

// What finish() derives. confirmation goes to the peer; verify_peer checks
// the peer's. The other members are RFC 9382's intermediate values, kept so
// that the known-answer test can compare each one with Appendix B.
class Spake2Keys {
 public:
  Secret<kSpake2KeySize> ke;        // the RFC's output key (braid's keys come from TLS; unused)
  Spake2Mac confirmation{};         // ours: cA if we are A, cB if we are B
  Secret<kSpake2ShareSize> k;       // K, encoded
  Secret<32> transcript_hash;       // SHA-256(TT) = Ke ‖ Ka
  Secret<kSpake2KeySize> ka, kca, kcb;

  // Constant time. False for a wrong length too.
  bool verify_peer(std::span<const std::uint8_t> mac) const;

 private:
  friend class Spake2;
  Spake2Mac expected_peer_{};
};

class Spake2 {
 public:
  enum class Side : std::uint8_t { a, b };  // A masks with M, B with N

  // Draws the secret scalar (x for A, y for B) from OpenSSL's CSPRNG and
  // computes the share. Errc::invalid_argument if w is not in [1, p).
  static Result<Spake2> start(Side side, Spake2Context context, const Spake2Password& w);

  // Known-answer tests only (RFC 9382 Appendix B gives x and y): the secret
  // scalar is `secret` instead of a random one. A fixed secret used twice
  // with the same w lets anyone who sees both exchanges test guesses of w;
  // nothing outside tests may call this.
  static Result<Spake2> start_with_fixed_secret_for_tests(Side side, Spake2Context context, const Spake2Password& w,
                                                          const Secret<kSpake2ScalarSize>& secret);

  Spake2(Spake2&&) noexcept;
  Spake2& operator=(Spake2&&) noexcept;
  ~Spake2();

  Side side() const { return side_; }
  // pA if we are A, pB if we are B: what goes to the peer first.
  const Spake2Share& share() const { return share_; }

  // Takes the peer's share (pB if we are A, and the other way round) and
  // derives the keys. Errc::protocol_error if it is not an uncompressed
  // P-256 point on the curve other than the identity; Errc::pairing_failed
  // if K is the identity (the share exactly cancels the password mask);
  // Errc::invalid_argument if this object already finished. Once only.
  Result<Spake2Keys> finish(std::span<const std::uint8_t> peer_share);

 private:
  struct State;
  Spake2() = default;
  static Result<Spake2> make(Side side, Spake2Context context, const Spake2Password& w,
                             const Secret<kSpake2ScalarSize>* fixed_secret);

  Side side_ = Side::a;
  Spake2Share share_{};
  std::unique_ptr<State> state_;  // OpenSSL objects and the secrets; null once finished
};

}  // namespace braid::security
