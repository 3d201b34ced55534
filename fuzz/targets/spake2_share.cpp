// The pairing exchange's one peer-chosen value: the SPAKE2 share
// (security::Spake2::finish, engine/security/spake2.h), which a peer that
// does not know the code — or is not braid at all — sends as it likes.
// Input: a mode byte, a password length and password, then the share.
// Properties:
//   - any share of any length is refused (protocol_error: not a point on
//     the curve, the identity, a wrong length; pairing_failed: it cancels
//     the mask) or gives keys — never a crash, never anything else;
//   - mode bit 0: the honest peer's share with one byte flipped (where the
//     input says): if it still gives keys, they do not confirm with the
//     honest peer's — a changed share never pairs;
//   - mode bit 1: the honest exchange: both sides confirm each other.
#include <string>

#include "engine/security/spake2.h"
#include "fuzz_support.hpp"

using namespace braid;
using security::Errc;
using security::Spake2;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0];
  const size_t plen = std::min<size_t>(data[1], size - 2);
  const std::span<const uint8_t> password(data + 2, plen);
  std::span<const uint8_t> rest(data + 2 + plen, size - 2 - plen);
  auto w = security::spake2_password(password);
  if (!w) return 0;
  const security::Spake2Context ctx{{'s', 'e', 'n', 'd'}, {'r', 'e', 'c', 'v'}, {'b', 'r', 'a', 'i', 'd'}};
  auto a = Spake2::start(Spake2::Side::a, ctx, w.value());
  auto b = Spake2::start(Spake2::Side::b, ctx, w.value());
  FUZZ_CHECK(a.ok() && b.ok());
  if (mode & 2) {  // the honest exchange
    auto ka = a.value().finish(b.value().share());
    auto kb = b.value().finish(a.value().share());
    FUZZ_CHECK(ka.ok() && kb.ok());
    FUZZ_CHECK(ka.value().verify_peer(kb.value().confirmation));
    FUZZ_CHECK(kb.value().verify_peer(ka.value().confirmation));
    return 0;
  }
  if (mode & 1) {  // the honest share, one byte changed
    security::Spake2Share changed = b.value().share();
    const size_t at = rest.empty() ? 0 : rest[0] % changed.size();
    const uint8_t x = rest.size() > 1 && rest[1] ? rest[1] : 1;
    changed[at] ^= x;
    auto ka = a.value().finish(changed);
    auto kb = b.value().finish(a.value().share());
    FUZZ_CHECK(kb.ok());
    if (ka) FUZZ_CHECK(!kb.value().verify_peer(ka.value().confirmation));
    else
      FUZZ_CHECK(ka.error().code == Errc::protocol_error || ka.error().code == Errc::pairing_failed);
    return 0;
  }
  auto k = a.value().finish(rest);  // whatever the peer sent
  if (!k) FUZZ_CHECK(k.error().code == Errc::protocol_error || k.error().code == Errc::pairing_failed);
  else FUZZ_CHECK(rest.size() == security::kSpake2ShareSize);
  // Finished once: a second share is refused, whatever it is.
  auto again = a.value().finish(b.value().share());
  FUZZ_CHECK(!again && again.error().code == Errc::invalid_argument);
  return 0;
}
