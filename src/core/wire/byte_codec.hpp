// Big-endian encoding of integers and length-prefixed byte strings, with a
// bounds-checked reader: a truncated or oversized field from the peer makes
// the reader fail, never read past the buffer.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace braid::wire {

class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void i64(int64_t v) { put(static_cast<uint64_t>(v), 8); }
  void raw(std::span<const uint8_t> b) { out_.insert(out_.end(), b.begin(), b.end()); }
  /// u32 length, then the bytes (kept as raw bytes: names need not be UTF-8).
  void bytes(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }

 private:
  void put(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t>& out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> in) : in_(in) {}
  bool ok() const { return ok_; }
  void fail() { ok_ = false; }
  bool at_end() const { return pos_ == in_.size(); }
  size_t remaining() const { return in_.size() - pos_; }

  uint8_t u8() { return static_cast<uint8_t>(get(1)); }
  uint16_t u16() { return static_cast<uint16_t>(get(2)); }
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  uint64_t u64() { return get(8); }
  int64_t i64() { return static_cast<int64_t>(get(8)); }
  /// Copies exactly out.size() bytes.
  void raw(std::span<uint8_t> out) {
    if (!need(out.size())) return;
    std::memcpy(out.data(), in_.data() + pos_, out.size());
    pos_ += out.size();
  }
  /// A u32-length-prefixed byte string of at most `max` bytes.
  std::string bytes(size_t max) {
    const uint32_t n = u32();
    if (!ok_ || n > max || !need(n)) {
      ok_ = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  bool need(size_t n) {
    if (!ok_ || remaining() < n) ok_ = false;
    return ok_;
  }
  uint64_t get(int n) {
    if (!need(static_cast<size_t>(n))) return 0;
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | in_[pos_ + static_cast<size_t>(i)];
    pos_ += static_cast<size_t>(n);
    return v;
  }
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace braid::wire
