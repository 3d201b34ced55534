// The offer (wire::decode(Offer)) and what the receiver does next with its
// manifest before touching the disk: each path through
// security::RelativePath::parse (and printable_path for its messages), the
// transfer's byte layout (files::FileLayout) and its resume key
// (files::transfer_key). Input: an offer payload. Properties:
//   - decode → encode → decode gives the same offer, field by field;
//   - the file sizes add up without overflow, and FileLayout's total is
//     that sum (the receiver sizes its files and its free-space check by it);
//   - FileLayout maps a range to extents that tile it and stay inside files;
//   - a path RelativePath accepts is relative, has no empty, "." or ".."
//     component, no NUL, components of at most 255 bytes, at most 4095 bytes
//     in all, and is kept byte for byte; one it refuses says path_invalid;
//   - printable_path never lets a control byte through.
#include <algorithm>
#include <string_view>

#include "engine/files/file_layout.hpp"
#include "engine/files/transfer_key.hpp"
#include "engine/security/safe_path.h"
#include "core/wire/messages.hpp"
#include "fuzz_support.hpp"

using namespace braid;
using namespace braid::wire;

namespace {

void printable(std::string_view bytes) {
  const std::string shown = security::printable_path(bytes);
  for (unsigned char c : shown) FUZZ_CHECK(c >= 0x20 && c != 0x7f);
}

void check_path(const std::string& bytes) {
  printable(bytes);
  auto p = security::RelativePath::parse(bytes);
  if (!p) {
    FUZZ_CHECK(p.error().code == security::Errc::path_invalid);
    return;
  }
  const auto& rel = p.value();
  FUZZ_CHECK(rel.str() == bytes);
  FUZZ_CHECK(!bytes.empty() && bytes.front() != '/' && bytes.size() <= security::kMaxPathLength);
  FUZZ_CHECK(bytes.find('\0') == std::string::npos);
  std::string joined;
  for (const auto& c : rel.components()) {
    FUZZ_CHECK(!c.empty() && c != "." && c != ".." && c.size() <= security::kMaxNameLength);
    FUZZ_CHECK(c.find('/') == std::string::npos);
    if (!joined.empty()) joined += '/';
    joined += c;
  }
  FUZZ_CHECK(joined == bytes);
}

void check_layout(const Offer& o) {
  unsigned __int128 sum = 0;
  for (const auto& e : o.entries)
    if (e.kind == EntryKind::file) sum += e.size;
  FUZZ_CHECK(sum <= UINT64_MAX);
  FUZZ_CHECK(o.total_bytes() == sum);
  const files::FileLayout layout(o.entries);
  FUZZ_CHECK(layout.total() == o.total_bytes());

  // A few ranges around the file boundaries: the extents tile each exactly.
  std::vector<std::pair<uint64_t, uint64_t>> probes{{0, layout.total()}};
  uint64_t at = 0;
  for (const auto& e : o.entries) {
    if (e.kind != EntryKind::file) continue;
    if (at > 0) probes.push_back({at - 1, std::min<uint64_t>(2, layout.total() - (at - 1))});
    at += e.size;
  }
  for (auto [off, len] : probes) {
    uint64_t next = off, covered = 0;
    const bool whole = layout.for_each(off, len, [&](const files::Extent& x) {
      FUZZ_CHECK(x.entry < o.entries.size() && o.entries[x.entry].kind == EntryKind::file);
      FUZZ_CHECK(x.transfer_offset == next && x.length > 0);
      FUZZ_CHECK(x.file_offset < o.entries[x.entry].size && x.length <= o.entries[x.entry].size - x.file_offset);
      next += x.length;
      covered += x.length;
      return true;
    });
    FUZZ_CHECK(!whole || covered == len);
    FUZZ_CHECK(whole || len > 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Offer o;
  if (!decode(fuzz::bytes_of(data, size), o)) return 0;

  const std::vector<uint8_t> once = encode_message(o);
  Offer again;
  FUZZ_CHECK(decode(once, again));
  FUZZ_CHECK(again.transfer_id == o.transfer_id && again.hash == o.hash && again.chunk_size == o.chunk_size);
  FUZZ_CHECK(again.entries == o.entries);
  for (const auto& e : o.entries) {
    FUZZ_CHECK(e.mode <= 07777 && e.mtime_nsec < 1'000'000'000u);
    FUZZ_CHECK(e.kind == EntryKind::file || e.size == 0);
  }

  check_layout(o);
  for (const auto& e : o.entries) {
    check_path(e.path);
    printable(e.link_target.str());
  }
  const uint8_t identity[] = {1, 2, 3};
  const auto k1 = files::transfer_key(o, identity);
  FUZZ_CHECK(k1 == files::transfer_key(again, identity));
  FUZZ_CHECK(k1.tag().size() == 16);
  return 0;
}
