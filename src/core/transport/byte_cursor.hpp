// Bounds-checked readers and writers over caller-owned buffers, with QUIC
// variable-length integers (RFC 9000 §16): 1, 2, 4 or 8 bytes, the top two bits
// of the first byte give the length. Nothing here allocates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace braid::transport {

/// Largest value a QUIC varint can carry (2^62 - 1).
inline constexpr uint64_t kVarintMax = (uint64_t{1} << 62) - 1;

/// Encoded size of `v` as a varint (values above kVarintMax are not encodable).
constexpr size_t varint_size(uint64_t v) {
  if (v < (1u << 6)) return 1;
  if (v < (1u << 14)) return 2;
  if (v < (uint64_t{1} << 30)) return 4;
  return 8;
}

/// Writes into a fixed span; every write reports failure instead of overrunning.
class ByteWriter {
 public:
  explicit ByteWriter(std::span<uint8_t> out) : out_(out) {}

  size_t written() const { return pos_; }
  size_t remaining() const { return out_.size() - pos_; }

  bool put_u8(uint8_t v) {
    if (remaining() < 1) return false;
    out_[pos_++] = v;
    return true;
  }
  bool put_be(uint64_t v, size_t n) {
    if (remaining() < n) return false;
    for (size_t i = 0; i < n; ++i) out_[pos_ + i] = static_cast<uint8_t>(v >> (8 * (n - 1 - i)));
    pos_ += n;
    return true;
  }
  bool put_varint(uint64_t v) {
    if (v > kVarintMax) return false;
    const size_t n = varint_size(v);
    const uint64_t prefix = n == 1 ? 0 : n == 2 ? 1 : n == 4 ? 2 : 3;
    if (!put_be(v, n)) return false;
    out_[pos_ - n] |= static_cast<uint8_t>(prefix << 6);
    return true;
  }
  /// Reserves `n` bytes and returns them for the caller to fill (e.g. payload).
  std::span<uint8_t> reserve(size_t n) {
    if (remaining() < n) return {};
    auto s = out_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  std::span<uint8_t> out_;
  size_t pos_ = 0;
};

/// Reads from a fixed span; a failed read leaves the reader unusable (ok() false).
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> in) : in_(in) {}

  bool ok() const { return ok_; }
  bool empty() const { return pos_ >= in_.size(); }
  size_t remaining() const { return in_.size() - pos_; }

  uint8_t u8() {
    if (remaining() < 1) return fail();
    return in_[pos_++];
  }
  uint64_t be(size_t n) {
    if (remaining() < n) return fail();
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | in_[pos_ + i];
    pos_ += n;
    return v;
  }
  uint64_t varint() {
    if (remaining() < 1) return fail();
    const size_t n = size_t{1} << (in_[pos_] >> 6);
    if (remaining() < n) return fail();
    uint64_t v = in_[pos_] & 0x3f;
    for (size_t i = 1; i < n; ++i) v = (v << 8) | in_[pos_ + i];
    pos_ += n;
    return v;
  }
  std::span<const uint8_t> bytes(size_t n) {
    if (remaining() < n) {
      fail();
      return {};
    }
    auto s = in_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  std::span<const uint8_t> rest() { return bytes(remaining()); }
  /// The unread bytes, without consuming them.
  std::span<const uint8_t> peek_rest() const { return in_.subspan(pos_); }

 private:
  uint8_t fail() {
    ok_ = false;
    pos_ = in_.size();
    return 0;
  }
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace braid::transport
