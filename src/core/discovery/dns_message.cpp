#include "core/discovery/dns_message.hpp"

#include <algorithm>

namespace braid::discovery {
namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool label_eq(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  bool ok() const { return ok_; }
  void fail(DecodeError e) {
    if (ok_) error_ = e;
    ok_ = false;
  }
  DecodeError error() const { return error_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return in_.size() - pos_; }

  uint8_t u8() { return static_cast<uint8_t>(get(1)); }
  uint16_t u16() { return static_cast<uint16_t>(get(2)); }
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  void skip(size_t n) {
    if (!need(n)) return;
    pos_ += n;
  }
  std::span<const uint8_t> take(size_t n) {
    if (!need(n)) return {};
    auto s = in_.subspan(pos_, n);
    pos_ += n;
    return s;
  }

  // A name at the read position; the position moves past its in-place part
  // (up to and including the first pointer or the final zero).
  DnsName name() {
    DnsName out;
    size_t at = pos_;
    size_t end_in_place = 0;  // where reading resumes: set at the first pointer
    bool jumped = false;
    int jumps = 0;
    size_t wire = 1;  // the final zero
    while (ok_) {
      if (at >= in_.size()) {
        fail(DecodeError::bad_name);
        break;
      }
      const uint8_t len = in_[at];
      if (len == 0) {
        if (!jumped) end_in_place = at + 1;
        break;
      }
      if ((len & 0xC0) == 0xC0) {
        if (at + 1 >= in_.size()) {
          fail(DecodeError::bad_name);
          break;
        }
        const size_t target = static_cast<size_t>(len & 0x3F) << 8 | in_[at + 1];
        // Strictly backwards from this label: a chain of pointers always
        // moves towards the start, so it ends (RFC 1035 4.1.4 points only to
        // a "prior occurrence").
        if (target >= at || ++jumps > kMaxPointerJumps) {
          fail(DecodeError::pointer_loop);
          break;
        }
        if (!jumped) end_in_place = at + 2;
        jumped = true;
        at = target;
        continue;
      }
      if ((len & 0xC0) != 0) {  // 0x40 and 0x80: extended / reserved label types
        fail(DecodeError::bad_name);
        break;
      }
      if (at + 1 + len > in_.size()) {
        fail(DecodeError::bad_name);
        break;
      }
      wire += 1u + len;
      if (wire > kMaxNameBytes) {
        fail(DecodeError::bad_name);
        break;
      }
      out.labels.emplace_back(reinterpret_cast<const char*>(in_.data() + at + 1), len);
      at += 1u + len;
    }
    if (ok_) pos_ = end_in_place;
    return out;
  }

 private:
  bool need(size_t n) {
    if (ok_ && remaining() < n) fail(DecodeError::too_short);
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
  DecodeError error_ = DecodeError::too_short;
};

Record read_record(Reader& r) {
  Record rec;
  rec.name = r.name();
  rec.type = r.u16();
  const uint16_t cls = r.u16();
  rec.cache_flush = (cls & kClassTopBit) != 0;
  rec.rclass = cls & ~kClassTopBit;
  rec.ttl = r.u32();
  const uint16_t rdlen = r.u16();
  if (!r.ok()) return rec;
  if (rdlen > r.remaining()) {
    r.fail(DecodeError::bad_record);
    return rec;
  }
  const size_t start = r.pos();
  switch (static_cast<RrType>(rec.type)) {
    case RrType::a: {
      if (rdlen != 4) return r.fail(DecodeError::bad_record), rec;
      std::array<uint8_t, 4> a{};
      auto s = r.take(4);
      std::copy(s.begin(), s.end(), a.begin());
      rec.data = a;
      break;
    }
    case RrType::aaaa: {
      if (rdlen != 16) return r.fail(DecodeError::bad_record), rec;
      std::array<uint8_t, 16> a{};
      auto s = r.take(16);
      std::copy(s.begin(), s.end(), a.begin());
      rec.data = a;
      break;
    }
    case RrType::ptr:
      rec.data = r.name();
      break;
    case RrType::srv: {
      SrvData srv;
      srv.priority = r.u16();
      srv.weight = r.u16();
      srv.port = r.u16();
      srv.target = r.name();
      rec.data = std::move(srv);
      break;
    }
    case RrType::txt: {
      std::vector<std::string> strings;
      while (r.ok() && r.pos() < start + rdlen) {
        const uint8_t n = r.u8();
        if (r.pos() + n > start + rdlen || strings.size() >= kMaxTxtStrings) return r.fail(DecodeError::bad_record), rec;
        auto s = r.take(n);
        strings.emplace_back(reinterpret_cast<const char*>(s.data()), s.size());
      }
      rec.data = std::move(strings);
      break;
    }
    default: {
      auto s = r.take(rdlen);
      rec.data = std::vector<uint8_t>(s.begin(), s.end());
      break;
    }
  }
  // A name inside rdata may point elsewhere, but what it holds in place must
  // end exactly where rdlength says.
  if (r.ok() && r.pos() != start + rdlen) r.fail(DecodeError::bad_record);
  return rec;
}

void put16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
void put32(std::vector<uint8_t>& out, uint32_t v) {
  put16(out, static_cast<uint16_t>(v >> 16));
  put16(out, static_cast<uint16_t>(v));
}
void put_name(std::vector<uint8_t>& out, const DnsName& n) {
  for (const auto& l : n.labels) {
    const size_t len = std::min(l.size(), kMaxLabel);
    out.push_back(static_cast<uint8_t>(len));
    out.insert(out.end(), l.begin(), l.begin() + static_cast<std::ptrdiff_t>(len));
  }
  out.push_back(0);
}

void put_record(std::vector<uint8_t>& out, const Record& rec) {
  put_name(out, rec.name);
  put16(out, rec.type);
  put16(out, static_cast<uint16_t>(rec.rclass | (rec.cache_flush ? kClassTopBit : 0)));
  put32(out, rec.ttl);
  const size_t len_at = out.size();
  put16(out, 0);
  std::visit(
      [&](const auto& d) {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, std::array<uint8_t, 4>> || std::is_same_v<T, std::array<uint8_t, 16>> ||
                      std::is_same_v<T, std::vector<uint8_t>>) {
          out.insert(out.end(), d.begin(), d.end());
        } else if constexpr (std::is_same_v<T, DnsName>) {
          put_name(out, d);
        } else if constexpr (std::is_same_v<T, SrvData>) {
          put16(out, d.priority);
          put16(out, d.weight);
          put16(out, d.port);
          put_name(out, d.target);
        } else {  // TXT: an empty TXT record still holds one empty string (RFC 6763 6.1)
          if (d.empty()) out.push_back(0);
          for (const auto& s : d) {
            const size_t n = std::min<size_t>(s.size(), 255);
            out.push_back(static_cast<uint8_t>(n));
            out.insert(out.end(), s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n));
          }
        }
      },
      rec.data);
  const size_t rdlen = out.size() - len_at - 2;
  out[len_at] = static_cast<uint8_t>(rdlen >> 8);
  out[len_at + 1] = static_cast<uint8_t>(rdlen);
}

}  // namespace

DnsName DnsName::of(std::initializer_list<std::string_view> ls) {
  DnsName n;
  for (auto l : ls) n.labels.emplace_back(l);
  return n;
}

DnsName DnsName::parse_dotted(std::string_view dotted) {
  DnsName n;
  while (!dotted.empty()) {
    const auto dot = dotted.find('.');
    n.labels.emplace_back(dotted.substr(0, dot));
    if (dot == std::string_view::npos) break;
    dotted.remove_prefix(dot + 1);
  }
  return n;
}

std::string DnsName::str() const {
  std::string s;
  for (const auto& l : labels) {
    if (!s.empty()) s += '.';
    for (char c : l) {
      if (c == '.' || c == '\\') s += '\\';
      s += c;
    }
  }
  return s;
}

size_t DnsName::wire_size() const {
  size_t n = 1;
  for (const auto& l : labels) n += 1 + std::min(l.size(), kMaxLabel);
  return n;
}

bool DnsName::operator==(const DnsName& o) const {
  if (labels.size() != o.labels.size()) return false;
  for (size_t i = 0; i < labels.size(); ++i)
    if (!label_eq(labels[i], o.labels[i])) return false;
  return true;
}

bool DnsName::ends_with(const DnsName& suffix) const {
  if (suffix.labels.size() > labels.size()) return false;
  const size_t off = labels.size() - suffix.labels.size();
  for (size_t i = 0; i < suffix.labels.size(); ++i)
    if (!label_eq(labels[off + i], suffix.labels[i])) return false;
  return true;
}

bool Record::same_rr(const Record& o) const {
  if (type != o.type || rclass != o.rclass || !(name == o.name) || data.index() != o.data.index()) return false;
  return data == o.data;  // names inside compare as DnsName does: case-insensitively
}

std::string_view decode_error_name(DecodeError e) {
  switch (e) {
    case DecodeError::too_short: return "too_short";
    case DecodeError::too_long: return "too_long";
    case DecodeError::too_many_records: return "too_many_records";
    case DecodeError::bad_name: return "bad_name";
    case DecodeError::pointer_loop: return "pointer_loop";
    case DecodeError::bad_record: return "bad_record";
  }
  return "unknown";
}

Decoded decode(std::span<const uint8_t> packet) {
  Decoded out;
  if (packet.size() > kMaxPacket) {
    out.error = DecodeError::too_long;
    return out;
  }
  Reader r(packet);
  Message m;
  m.id = r.u16();
  m.flags = r.u16();
  const size_t qd = r.u16(), an = r.u16(), ns = r.u16(), ar = r.u16();
  if (!r.ok()) {
    out.error = r.error();
    return out;
  }
  if (qd + an + ns + ar > kMaxRecords) {
    out.error = DecodeError::too_many_records;
    return out;
  }
  // Every question takes at least 5 bytes and every record 11: a count the
  // packet cannot hold fails here, before anything is reserved for it.
  if (qd * 5 + (an + ns + ar) * 11 > r.remaining()) {
    out.error = DecodeError::too_short;
    return out;
  }
  for (size_t i = 0; i < qd && r.ok(); ++i) {
    Question q;
    q.name = r.name();
    q.type = r.u16();
    const uint16_t cls = r.u16();
    q.unicast_response = (cls & kClassTopBit) != 0;
    q.rclass = cls & ~kClassTopBit;
    m.questions.push_back(std::move(q));
  }
  for (auto [count, section] : {std::pair{an, &m.answers}, std::pair{ns, &m.authorities}, std::pair{ar, &m.additionals}})
    for (size_t i = 0; i < count && r.ok(); ++i) section->push_back(read_record(r));
  if (!r.ok()) {
    out.error = r.error();
    return out;
  }
  // Bytes after the last record are ignored (some stacks pad).
  out.message = std::move(m);
  return out;
}

std::vector<uint8_t> encode(const Message& m) {
  std::vector<uint8_t> out;
  out.reserve(512);
  put16(out, m.id);
  put16(out, m.flags);
  put16(out, static_cast<uint16_t>(m.questions.size()));
  put16(out, static_cast<uint16_t>(m.answers.size()));
  put16(out, static_cast<uint16_t>(m.authorities.size()));
  put16(out, static_cast<uint16_t>(m.additionals.size()));
  for (const auto& q : m.questions) {
    put_name(out, q.name);
    put16(out, q.type);
    put16(out, static_cast<uint16_t>(q.rclass | (q.unicast_response ? kClassTopBit : 0)));
  }
  for (const auto* section : {&m.answers, &m.authorities, &m.additionals})
    for (const auto& rec : *section) put_record(out, rec);
  return out;
}

}  // namespace braid::discovery
