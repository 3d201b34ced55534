#include "spake2.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>

#include <algorithm>
#include <string_view>

#include "kdf.h"
#include "ossl.h"

namespace braid::security {
namespace {

// RFC 9382 §6, P-256: SEC1 compressed points, from the seeds
// "1.2.840.10045.3.1.7 point generation seed (M)" / "(N)" (Appendix A), so
// nobody knows their discrete logarithms.
constexpr std::string_view kM = "02886e2f97ace46e55ba9dd7242579f2993b64e16ef3dcab95afd497333d8fa12f";
constexpr std::string_view kN = "03d8bbd6c639c62937b04d997f38c3770719c629d7014d49a24b4f98baa1292b49";

constexpr std::size_t kCompressedSize = 33;

std::array<std::uint8_t, kCompressedSize> from_hex(std::string_view hex) {
  auto nibble = [](char c) { return static_cast<std::uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10); };
  std::array<std::uint8_t, kCompressedSize> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint8_t>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  return out;
}

// len(S) of §3.2: the length as an 8-byte little-endian number.
void append_with_length(std::vector<std::uint8_t>& out, std::span<const std::uint8_t> bytes) {
  std::uint64_t n = bytes.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  out.insert(out.end(), bytes.begin(), bytes.end());
}

// Wipes a buffer that held K or w before it is freed.
struct WipedBytes {
  std::vector<std::uint8_t> bytes;
  ~WipedBytes() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
};

}  // namespace

struct Spake2::State {
  Spake2Context context;
  ossl::EcGroup group;
  ossl::BnCtx bn;
  ossl::Bn w;       // the password scalar
  ossl::Bn secret;  // x (A) or y (B)
  Spake2Password w_bytes;
};

Spake2::Spake2(Spake2&&) noexcept = default;
Spake2& Spake2::operator=(Spake2&&) noexcept = default;
Spake2::~Spake2() = default;

Result<Spake2Password> spake2_password(std::span<const std::uint8_t> password) {
  Secret<kSpake2ScalarSize + 8> wide;
  if (Status s = hkdf_sha256(password, as_bytes("braid pairing v2"), as_bytes("braid spake2 w"), wide.span()); !s)
    return s.error();
  ossl::EcGroup group(EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1));
  ossl::BnCtx ctx(BN_CTX_new());
  ossl::Bn wide_bn(BN_bin2bn(wide.data(), static_cast<int>(wide.size()), nullptr));
  ossl::Bn w(BN_new());
  if (!group || !ctx || !wide_bn || !w) return ossl::crypto_error("cannot set up P-256 for SPAKE2");
  BN_set_flags(wide_bn.get(), BN_FLG_CONSTTIME);
  BN_set_flags(w.get(), BN_FLG_CONSTTIME);
  if (BN_mod(w.get(), wide_bn.get(), EC_GROUP_get0_order(group.get()), ctx.get()) != 1)
    return ossl::crypto_error("cannot reduce the SPAKE2 password scalar");
  // Zero has probability 2^-256; it would make w·M the identity.
  if (BN_is_zero(w.get())) return make_error(Errc::crypto_error, "the SPAKE2 password scalar came out zero");
  Spake2Password out;
  if (BN_bn2binpad(w.get(), out.data(), static_cast<int>(out.size())) != static_cast<int>(out.size()))
    return ossl::crypto_error("cannot encode the SPAKE2 password scalar");
  return out;
}

bool Spake2Keys::verify_peer(std::span<const std::uint8_t> mac) const {
  return mac.size() == expected_peer_.size() && CRYPTO_memcmp(mac.data(), expected_peer_.data(), mac.size()) == 0;
}

Result<Spake2> Spake2::start(Side side, Spake2Context context, const Spake2Password& w) {
  return make(side, std::move(context), w, nullptr);
}

Result<Spake2> Spake2::start_with_fixed_secret_for_tests(Side side, Spake2Context context, const Spake2Password& w,
                                                         const Secret<kSpake2ScalarSize>& secret) {
  return make(side, std::move(context), w, &secret);
}

Result<Spake2> Spake2::make(Side side, Spake2Context context, const Spake2Password& w,
                            const Secret<kSpake2ScalarSize>* fixed_secret) {
  if (context.aad.size() > (1u << 13) - 16)  // §3.2: AAD of at most 2^16 − 128 bits
    return make_error(Errc::invalid_argument, "SPAKE2 associated data longer than RFC 9382 allows");
  Spake2 s;
  s.side_ = side;
  s.state_ = std::make_unique<State>();
  State& st = *s.state_;
  st.context = std::move(context);
  st.w_bytes = w;
  st.group.reset(EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1));
  st.bn.reset(BN_CTX_new());
  st.w.reset(BN_bin2bn(w.data(), static_cast<int>(w.size()), nullptr));
  st.secret.reset(BN_new());
  if (!st.group || !st.bn || !st.w || !st.secret) return ossl::crypto_error("cannot set up P-256 for SPAKE2");
  BN_set_flags(st.w.get(), BN_FLG_CONSTTIME);
  BN_set_flags(st.secret.get(), BN_FLG_CONSTTIME);
  const EC_GROUP* g = st.group.get();
  const BIGNUM* order = EC_GROUP_get0_order(g);
  if (BN_is_zero(st.w.get()) || BN_cmp(st.w.get(), order) >= 0)
    return make_error(Errc::invalid_argument, "the SPAKE2 password scalar is not in [1, p)");

  if (fixed_secret != nullptr) {
    if (BN_bin2bn(fixed_secret->data(), static_cast<int>(fixed_secret->size()), st.secret.get()) == nullptr)
      return ossl::crypto_error("cannot read the SPAKE2 secret scalar");
    if (BN_cmp(st.secret.get(), order) >= 0)
      return make_error(Errc::invalid_argument, "the SPAKE2 secret scalar is not in [0, p)");
  } else if (BN_priv_rand_range_ex(st.secret.get(), order, 0, st.bn.get()) != 1) {  // uniform in [0, p)
    return ossl::crypto_error("cannot draw the SPAKE2 secret scalar");
  }

  // share = secret·P + w·(M or N). Two single-scalar multiplications: OpenSSL
  // runs those in constant time (a ladder, or nistz256's constant-time
  // tables), which a combined two-scalar EC_POINT_mul does not promise.
  const auto mask_bytes = from_hex(side == Side::a ? kM : kN);
  ossl::EcPoint mask(EC_POINT_new(g)), masked(EC_POINT_new(g)), x_p(EC_POINT_new(g)), share(EC_POINT_new(g));
  if (!mask || !masked || !x_p || !share ||
      EC_POINT_oct2point(g, mask.get(), mask_bytes.data(), mask_bytes.size(), st.bn.get()) != 1 ||
      EC_POINT_mul(g, masked.get(), nullptr, mask.get(), st.w.get(), st.bn.get()) != 1 ||
      EC_POINT_mul(g, x_p.get(), st.secret.get(), nullptr, nullptr, st.bn.get()) != 1 ||
      EC_POINT_add(g, share.get(), x_p.get(), masked.get(), st.bn.get()) != 1 ||
      EC_POINT_point2oct(g, share.get(), POINT_CONVERSION_UNCOMPRESSED, s.share_.data(), s.share_.size(),
                         st.bn.get()) != s.share_.size())
    return ossl::crypto_error("cannot compute the SPAKE2 share");
  return s;
}

Result<Spake2Keys> Spake2::finish(std::span<const std::uint8_t> peer_share) {
  if (!state_) return make_error(Errc::invalid_argument, "this SPAKE2 exchange has already finished");
  // Whatever happens below, this secret scalar never answers another share.
  std::unique_ptr<State> st = std::move(state_);
  const EC_GROUP* g = st->group.get();
  BN_CTX* bn = st->bn.get();

  // §7: a received element must be a group member. The ciphersuite fixes the
  // uncompressed encoding; oct2point and is_on_curve check the equation.
  ossl::EcPoint peer(EC_POINT_new(g));
  if (!peer) return ossl::crypto_error("cannot allocate a P-256 point");
  if (peer_share.size() != kSpake2ShareSize || peer_share[0] != 0x04 ||
      EC_POINT_oct2point(g, peer.get(), peer_share.data(), peer_share.size(), bn) != 1 ||
      EC_POINT_is_on_curve(g, peer.get(), bn) != 1 || EC_POINT_is_at_infinity(g, peer.get()) == 1) {
    ossl::drain_errors();
    return make_error(Errc::protocol_error, "the peer's SPAKE2 share is not a P-256 point");
  }

  // K = secret·(peer − w·(N or M)), the peer's mask removed.
  const auto mask_bytes = from_hex(side_ == Side::a ? kN : kM);
  ossl::EcPoint mask(EC_POINT_new(g)), masked(EC_POINT_new(g)), unmasked(EC_POINT_new(g)), k(EC_POINT_new(g));
  if (!mask || !masked || !unmasked || !k ||
      EC_POINT_oct2point(g, mask.get(), mask_bytes.data(), mask_bytes.size(), bn) != 1 ||
      EC_POINT_mul(g, masked.get(), nullptr, mask.get(), st->w.get(), bn) != 1 ||
      EC_POINT_invert(g, masked.get(), bn) != 1 || EC_POINT_add(g, unmasked.get(), peer.get(), masked.get(), bn) != 1 ||
      EC_POINT_mul(g, k.get(), nullptr, unmasked.get(), st->secret.get(), bn) != 1)
    return ossl::crypto_error("cannot compute the SPAKE2 shared point");
  if (EC_POINT_is_at_infinity(g, k.get()) == 1)
    return make_error(Errc::pairing_failed, "the peer's SPAKE2 share cancels the password mask");

  Spake2Keys keys;
  if (EC_POINT_point2oct(g, k.get(), POINT_CONVERSION_UNCOMPRESSED, keys.k.data(), keys.k.size(), bn) != keys.k.size())
    return ossl::crypto_error("cannot encode the SPAKE2 shared point");

  Spake2Share theirs{};
  std::copy(peer_share.begin(), peer_share.end(), theirs.begin());
  const Spake2Share& p_a = side_ == Side::a ? share_ : theirs;
  const Spake2Share& p_b = side_ == Side::b ? share_ : theirs;
  WipedBytes tt;
  tt.bytes.reserve(6 * 8 + st->context.identity_a.size() + st->context.identity_b.size() + 3 * kSpake2ShareSize +
                   kSpake2ScalarSize);
  append_with_length(tt.bytes, st->context.identity_a);
  append_with_length(tt.bytes, st->context.identity_b);
  append_with_length(tt.bytes, p_a);
  append_with_length(tt.bytes, p_b);
  append_with_length(tt.bytes, keys.k.span());
  append_with_length(tt.bytes, st->w_bytes.span());

  unsigned int hash_len = 0;
  if (EVP_Digest(tt.bytes.data(), tt.bytes.size(), keys.transcript_hash.data(), &hash_len, EVP_sha256(), nullptr) != 1 ||
      hash_len != keys.transcript_hash.size())
    return ossl::crypto_error("SHA-256 of the SPAKE2 transcript failed");
  std::copy_n(keys.transcript_hash.data(), kSpake2KeySize, keys.ke.data());
  std::copy_n(keys.transcript_hash.data() + kSpake2KeySize, kSpake2KeySize, keys.ka.data());

  // "salt nil": RFC 5869 §2.2 reads an absent salt as HashLen zero bytes.
  const std::array<std::uint8_t, 32> no_salt{};
  WipedBytes info;
  info.bytes.assign({'C', 'o', 'n', 'f', 'i', 'r', 'm', 'a', 't', 'i', 'o', 'n', 'K', 'e', 'y', 's'});
  info.bytes.insert(info.bytes.end(), st->context.aad.begin(), st->context.aad.end());
  Secret<2 * kSpake2KeySize> kc;
  if (Status s = hkdf_sha256(keys.ka.span(), no_salt, info.bytes, kc.span()); !s) return s.error();
  std::copy_n(kc.data(), kSpake2KeySize, keys.kca.data());
  std::copy_n(kc.data() + kSpake2KeySize, kSpake2KeySize, keys.kcb.data());

  Spake2Mac c_a{}, c_b{};
  if (Status s = hmac_sha256(keys.kca.span(), tt.bytes, c_a); !s) return s.error();
  if (Status s = hmac_sha256(keys.kcb.span(), tt.bytes, c_b); !s) return s.error();
  keys.confirmation = side_ == Side::a ? c_a : c_b;
  keys.expected_peer_ = side_ == Side::a ? c_b : c_a;
  return keys;
}

}  // namespace braid::security
