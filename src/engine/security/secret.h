// Fixed-size secret bytes that are wiped when they go out of scope, so key
// material does not linger in freed memory or in moved-from objects.
#pragma once

#include <openssl/crypto.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace braid::security {

template <std::size_t N>
class Secret {
 public:
  Secret() { bytes_.fill(0); }
  explicit Secret(std::span<const std::uint8_t, N> from) { std::copy(from.begin(), from.end(), bytes_.begin()); }
  Secret(const Secret&) = default;
  Secret& operator=(const Secret&) = default;
  ~Secret() { OPENSSL_cleanse(bytes_.data(), N); }

  std::uint8_t* data() { return bytes_.data(); }
  const std::uint8_t* data() const { return bytes_.data(); }
  static constexpr std::size_t size() { return N; }
  std::span<std::uint8_t, N> span() { return bytes_; }
  std::span<const std::uint8_t, N> span() const { return bytes_; }

  // Constant time: secrets are compared only in tests, but never leak timing.
  friend bool operator==(const Secret& a, const Secret& b) { return CRYPTO_memcmp(a.data(), b.data(), N) == 0; }

 private:
  std::array<std::uint8_t, N> bytes_;
};

}  // namespace braid::security
