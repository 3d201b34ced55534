#include "engine/files/resume_journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <cstring>
#include <thread>

#include "core/wire/byte_codec.hpp"

namespace braid::files {
namespace {

constexpr char kMagic[8] = {'b', 'r', 'a', 'i', 'd', 'r', 'e', 's'};
constexpr uint32_t kFormat = 1;
constexpr uint32_t kFormatWithTag = 2;  // the parts tag before the check (JournalParams::parts_tag)
constexpr uint32_t kFormatWithOrigin = 3;  // the parts tag and the origin before the check
constexpr size_t kTagBytes = 8;
constexpr std::string_view kNamePrefix = ".braid-resume-";
constexpr uint8_t kHeld = 1;
constexpr uint8_t kRevoked = 2;
// Room reserved for records: two per chunk (pieces cut near the end, revocations)
// plus slack, at most 8 MiB (a 64 TiB transfer of 1 MiB chunks; beyond, appends
// simply need free space like any write).
constexpr uint64_t kMaxReserve = 8u << 20;

uint64_t check_of(std::span<const uint8_t> bytes) {
  PieceHasher h(wire::HashAlgo::xxh3_128);
  h.update(bytes);
  const wire::Digest d = h.finish();
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | d.bytes[static_cast<size_t>(i)];
  return v;
}

void seal(std::vector<uint8_t>& out) {
  const uint64_t c = check_of(out);
  wire::ByteWriter(out).u64(c);
}

bool checks(std::span<const uint8_t> sealed) {
  const auto body = sealed.first(sealed.size() - 8);
  wire::ByteReader r(sealed.last(8));
  return r.u64() == check_of(body);
}

uint8_t digest_size(wire::HashAlgo a) { return a == wire::HashAlgo::sha256 ? 32 : 16; }

// 16 hex digits as 8 bytes; nullopt for anything else.
std::optional<std::array<uint8_t, kTagBytes>> tag_bytes(const std::string& hex) {
  if (hex.size() != 2 * kTagBytes) return std::nullopt;
  std::array<uint8_t, kTagBytes> out{};
  for (size_t i = 0; i < kTagBytes; ++i) {
    unsigned v = 0;
    if (std::sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return std::nullopt;
    out[i] = static_cast<uint8_t>(v);
  }
  return out;
}

// The parts tag as bytes when it is not the key's own (format 2), else none (format 1).
std::optional<std::array<uint8_t, kTagBytes>> own_tag(const JournalParams& p) {
  if (p.parts_tag.empty() || p.parts_tag == p.key.tag()) return std::nullopt;
  return tag_bytes(p.parts_tag);
}

std::string tag_hex(std::span<const uint8_t> bytes) {
  wire::Digest d;
  d.size = kTagBytes;
  std::copy_n(bytes.begin(), kTagBytes, d.bytes.begin());
  return d.hex();
}

std::vector<uint8_t> header_bytes(const JournalParams& p) {
  const auto tag = own_tag(p);
  const auto origin = tag_bytes(p.origin);
  std::vector<uint8_t> out;
  out.reserve(ResumeJournal::kHeaderSize + 2 * kTagBytes);
  wire::ByteWriter w(out);
  w.raw(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kMagic), sizeof kMagic));
  w.u32(origin ? kFormatWithOrigin : tag ? kFormatWithTag : kFormat);
  w.u8(static_cast<uint8_t>(p.hash));
  w.u8(0);
  w.u16(0);
  w.u64(p.chunk_size);
  w.u64(p.total);
  w.raw(p.key.bytes);
  if (origin) {
    w.raw(tag ? *tag : *tag_bytes(p.key.tag()));
    w.raw(*origin);
  } else if (tag) {
    w.raw(*tag);
  }
  seal(out);
  return out;
}

std::vector<uint8_t> record_bytes(uint8_t kind, const PieceRecord& r) {
  std::vector<uint8_t> out;
  out.reserve(ResumeJournal::kRecordSize);
  wire::ByteWriter w(out);
  w.u8(kind);
  w.u8(kind == kHeld ? r.hash.size : 0);
  w.u16(0);
  w.u32(0);
  w.u64(r.offset);
  w.u64(r.length);
  if (kind == kHeld) {
    w.raw(r.hash.bytes);
  } else {
    const std::array<uint8_t, 32> zero{};
    w.raw(zero);
  }
  seal(out);
  return out;
}

int write_all(int fd, const uint8_t* p, size_t n, uint64_t at) {
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return ENOSPC;
    p += w;
    n -= static_cast<size_t>(w);
    at += static_cast<uint64_t>(w);
  }
  return 0;
}

}  // namespace

std::string ResumeJournal::file_name(const TransferKey& key) { return std::string(kNamePrefix) + key.tag(); }

bool ResumeJournal::is_journal_name(std::string_view name) { return name.starts_with(kNamePrefix); }

std::string ResumeJournal::origin_of(const wire::Offer& head, std::span<const wire::ManifestEntry> entries,
                                     std::span<const uint8_t> sender_identity, bool with_mtime) {
  std::vector<uint8_t> bytes;
  wire::ByteWriter w(bytes);
  const std::string_view label = "braid journal origin";
  w.raw(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(label.data()), label.size()));
  w.u32(static_cast<uint32_t>(sender_identity.size()));
  w.raw(sender_identity);
  w.u8(static_cast<uint8_t>(head.hash));
  w.u64(head.chunk_size);
  if (!entries.empty()) {
    const wire::ManifestEntry& e = entries.front();
    w.u8(static_cast<uint8_t>(e.kind));
    w.u32(static_cast<uint32_t>(e.path.size()));
    w.raw(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(e.path.data()), e.path.size()));
    w.u64(e.size);
    // A directory's size says nothing; its mtime moves whenever a name in
    // it comes or goes, so another tree under the same name is told apart.
    if (with_mtime) {
      w.i64(e.mtime_sec);
      w.u32(e.mtime_nsec);
    }
  }
  PieceHasher h(wire::HashAlgo::sha256);
  h.update(bytes);
  return tag_hex(h.finish().bytes);
}

bool ResumeJournal::exists(int dir_fd, const TransferKey& key) {
  struct stat st {};
  return ::fstatat(dir_fd, file_name(key).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

TransferKey ResumeJournal::key_for(int dir_fd, const wire::Offer& offer, std::span<const uint8_t> sender_identity,
                                   std::span<const uint32_t> kept) {
  if (const TransferKey first = transfer_key(offer, sender_identity, kept); exists(dir_fd, first)) return first;
  return running_transfer_key(offer, sender_identity, kept);
}

std::optional<std::string> ResumeJournal::read_origin(int dir_fd, const std::string& name) {
  // Read only: the journal may be locked by a session using it, and a
  // look must never create, cut or hold one.
  security::UniqueFd fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid()) return std::nullopt;
  std::array<uint8_t, kHeaderSize + 2 * kTagBytes> h{};
  size_t got = 0;
  while (got < h.size()) {
    const ssize_t n = ::pread(fd.get(), h.data() + got, h.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    got += static_cast<size_t>(n);
  }
  wire::ByteReader r(std::span<const uint8_t>(h).subspan(sizeof kMagic, 4));
  if (!std::equal(std::begin(kMagic), std::end(kMagic), h.begin()) || r.u32() != kFormatWithOrigin || !checks(h))
    return std::nullopt;
  return tag_hex(std::span<const uint8_t>(h).subspan(kHeaderSize - 8 + kTagBytes, kTagBytes));
}

ResumeJournal::ResumeJournal(int dir_fd, security::UniqueFd fd, const JournalParams& p)
    : dir_fd_(dir_fd), fd_(std::move(fd)), params_(p) {}

ResumeJournal::~ResumeJournal() = default;

std::variant<std::unique_ptr<ResumeJournal>, JournalError> ResumeJournal::open(int dir_fd, const JournalParams& p,
                                                                               std::chrono::milliseconds wait,
                                                                               const std::atomic<bool>* cancel) {
  const std::string name = file_name(p.key);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  security::UniqueFd fd;
  for (;;) {
    // The name is ours (hex), directly in the target directory: no path from the peer.
    fd.reset(::openat(dir_fd, name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid())
      return JournalError{false, "cannot open the resume journal '" + name + "': " + std::strerror(errno)};
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
      // Still the file under that name? The holder may have removed it before letting go.
      struct stat mine {}, named {};
      if (::fstat(fd.get(), &mine) == 0 && ::fstatat(dir_fd, name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 &&
          mine.st_ino == named.st_ino && mine.st_dev == named.st_dev)
        break;
      continue;
    }
    if (errno != EWOULDBLOCK)
      return JournalError{false, "cannot lock the resume journal '" + name + "': " + std::strerror(errno)};
    if (std::chrono::steady_clock::now() >= deadline || (cancel && cancel->load()))
      return JournalError{true, "the same transfer is being received by another braid session (" + name + " is locked)"};
    fd.reset();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::unique_ptr<ResumeJournal> j(new ResumeJournal(dir_fd, std::move(fd), p));
  if (!j->read_all() || (!p.parts_tag.empty() && j->parts_tag() != p.parts_tag)) {
    j->loaded_ = HeldRanges();
    j->params_.parts_tag = p.parts_tag;
    j->params_.origin = p.origin;  // read_all may have taken an older header's (none)
    if (const int err = j->write_header(); err != 0)
      return JournalError{false, "cannot write the resume journal '" + name + "': " + std::strerror(err)};
  }
  j->reserve_room();
  return j;
}

bool ResumeJournal::read_all() {
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0 || st.st_size < static_cast<off_t>(kHeaderSize)) return false;
  // Only whole records count; a journal far larger than its transfer could need is not ours to read.
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > kHeaderSize + 2 * kTagBytes +
                 kRecordSize * (2 * (params_.total / std::max<uint64_t>(1, params_.chunk_size)) + (1u << 20)))
    return false;
  std::vector<uint8_t> bytes(size);
  uint64_t got = 0;
  while (got < size) {
    const ssize_t n = ::pread(fd_.get(), bytes.data() + got, size - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<uint64_t>(n);
  }
  // Format 2 names the temporary files' tag, format 3 that and the origin;
  // the rest must be this transfer's, byte for byte.
  JournalParams found = params_;
  found.parts_tag.clear();
  found.origin.clear();
  size_t header_size = kHeaderSize;
  const uint32_t format = wire::ByteReader(std::span<const uint8_t>(bytes).subspan(sizeof kMagic, 4)).u32();
  if (format == kFormatWithTag || format == kFormatWithOrigin) {
    header_size += format == kFormatWithOrigin ? 2 * kTagBytes : kTagBytes;
    if (size < header_size) return false;
    const auto tags = std::span<const uint8_t>(bytes).subspan(kHeaderSize - 8);
    found.parts_tag = tag_hex(tags);
    if (format == kFormatWithOrigin) found.origin = tag_hex(tags.subspan(kTagBytes));
  }
  const auto header = std::span<const uint8_t>(bytes).first(header_size);
  const auto expected = header_bytes(found);
  if (expected.size() != header_size || !checks(header) || !std::equal(header.begin(), header.end() - 8, expected.begin()))
    return false;
  params_.parts_tag = found.parts_tag;
  params_.origin = found.origin;
  header_size_ = header_size;

  const uint8_t want = digest_size(params_.hash);
  uint64_t at = header_size_;
  for (; at + kRecordSize <= size; at += kRecordSize) {
    const auto rec = std::span<const uint8_t>(bytes).subspan(at, kRecordSize);
    if (!checks(rec)) break;  // torn: it and everything after it are gone
    wire::ByteReader r(rec);
    const uint8_t kind = r.u8();
    PieceRecord pr;
    pr.hash.size = r.u8();
    (void)r.u16();
    (void)r.u32();
    pr.offset = r.u64();
    pr.length = r.u64();
    r.raw(pr.hash.bytes);
    const bool in_bounds = pr.length > 0 && pr.offset < params_.total && pr.length <= params_.total - pr.offset;
    if (kind == kHeld && in_bounds && pr.hash.size == want) {
      loaded_.add(pr);
    } else if (kind == kRevoked && in_bounds) {
      loaded_.remove_overlapping(pr.offset, pr.length);
    } else {
      break;  // not something this version writes: trust nothing after it
    }
  }
  dropped_ = static_cast<size_t>((size - at) / kRecordSize);
  end_ = at;
  // Cut what did not check, so a later append can never make it readable again.
  if (at < size && ::ftruncate(fd_.get(), static_cast<off_t>(at)) != 0) return false;
  return true;
}

int ResumeJournal::write_header() {
  if (::ftruncate(fd_.get(), 0) != 0) return errno;
  const auto h = header_bytes(params_);
  if (const int err = write_all(fd_.get(), h.data(), h.size(), 0); err != 0) return err;
  header_size_ = h.size();
  end_ = header_size_;
  return ::fdatasync(fd_.get()) == 0 ? 0 : errno;
}

void ResumeJournal::reserve_room() {
  const uint64_t chunks = params_.total / std::max<uint64_t>(1, params_.chunk_size) + 1;
  const uint64_t want = std::min<uint64_t>(kMaxReserve, (2 * chunks + 256) * kRecordSize);
  // KEEP_SIZE: the file's size stays the records' end; appends land in blocks already ours.
  (void)::fallocate(fd_.get(), FALLOC_FL_KEEP_SIZE, static_cast<off_t>(end_), static_cast<off_t>(want));
}

int ResumeJournal::append(const std::vector<std::vector<uint8_t>>& records) {
  if (removed_ || records.empty()) return 0;
  std::vector<uint8_t> all;
  all.reserve(records.size() * kRecordSize);
  for (const auto& r : records) all.insert(all.end(), r.begin(), r.end());
  if (const int err = write_all(fd_.get(), all.data(), all.size(), end_); err != 0) return err;
  end_ += all.size();
  return ::fdatasync(fd_.get()) == 0 ? 0 : errno;
}

int ResumeJournal::rewrite(const std::vector<PieceRecord>& held) {
  if (removed_) return 0;
  // Cut first: a crash in between loses claims, it never keeps a stale one.
  if (::ftruncate(fd_.get(), static_cast<off_t>(header_size_)) != 0) return errno;
  end_ = header_size_;
  reserve_room();  // the cut gave the reserved blocks back
  return append_held(held);
}

int ResumeJournal::append_held(const std::vector<PieceRecord>& held) {
  std::vector<std::vector<uint8_t>> records;
  for (const auto& r : held) records.push_back(record_bytes(kHeld, r));
  return append(records);
}

int ResumeJournal::append_revoked(const std::vector<PieceRecord>& gone) {
  std::vector<std::vector<uint8_t>> records;
  for (const auto& r : gone) records.push_back(record_bytes(kRevoked, r));
  return append(records);
}

bool ResumeJournal::remove() {
  if (removed_) return true;
  removed_ = true;
  const bool gone = ::unlinkat(dir_fd_, file_name(params_.key).c_str(), 0) == 0 || errno == ENOENT;
  (void)::fsync(dir_fd_);
  return gone;
}

}  // namespace braid::files
