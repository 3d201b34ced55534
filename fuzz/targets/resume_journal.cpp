// The receiver's resume journal (files::ResumeJournal), read back from a
// file in the target directory whose bytes anyone with access to that
// directory — or a bad disk — may have changed. Input: one flags byte, then
// the journal file's bytes. The journal is opened with the parameters its
// own header names (so the records are read at all), unless flag 2 asks for
// a mismatch; flag 1 recomputes every check field first, so that fuzzed
// record fields get past the checksum and reach the record logic.
// Properties:
//   - the held ranges loaded equal a plain model of the format's rules
//     (records in order; stop at the first that does not check or that this
//     version does not write; a held record replaces what it overlaps, a
//     revoked one ends every claim it overlaps), and lie inside the transfer
//     with the hash size of its algorithm;
//   - the file is cut after the last record read (never rewritten in
//     front of it), or starts over as a bare header;
//   - round trip: rewrite(loaded records), reopen → the same ranges, no
//     record dropped.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/chunk_plan.hpp"
#include "engine/files/piece_hasher.hpp"
#include "engine/files/resume_journal.hpp"
#include "fuzz_support.hpp"

using namespace braid;
using namespace braid::files;
using u128 = unsigned __int128;

namespace {

constexpr size_t kH = ResumeJournal::kHeaderSize;
constexpr size_t kR = ResumeJournal::kRecordSize;

uint64_t be(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// The format's check: the first 8 bytes of XXH3-128 over what precedes it.
void reseal(uint8_t* p, size_t n) {
  PieceHasher h(wire::HashAlgo::xxh3_128);
  h.update(std::span<const uint8_t>(p, n - 8));
  const auto d = h.finish();
  std::memcpy(p + n - 8, d.bytes.data(), 8);
}

bool checks(const uint8_t* p, size_t n) {
  std::vector<uint8_t> copy(p, p + n);
  reseal(copy.data(), n);
  return std::memcmp(copy.data() + n - 8, p + n - 8, 8) == 0;
}

JournalParams params_from(const std::vector<uint8_t>& file) {
  JournalParams p;
  p.chunk_size = 1 << 16;
  p.total = 10 << 20;
  if (file.size() < kH) return p;
  // The receiver refuses an offer with another chunk size before it opens
  // a journal; so does this harness.
  const uint64_t chunk = be(&file[16], 8);
  if (chunk < core::ChunkPlan::kMinChunk.count() || chunk > core::ChunkPlan::kMaxChunk.count()) return p;
  p.hash = static_cast<wire::HashAlgo>(file[12]);
  p.chunk_size = chunk;
  p.total = be(&file[24], 8);
  std::memcpy(p.key.bytes.data(), &file[32], 32);
  return p;
}

// Is the header what a journal for `p` starts with?
bool header_matches(const std::vector<uint8_t>& f, const JournalParams& p) {
  if (f.size() < kH || !checks(f.data(), kH)) return false;
  const uint8_t magic[8] = {'b', 'r', 'a', 'i', 'd', 'r', 'e', 's'};
  return std::memcmp(f.data(), magic, 8) == 0 && be(&f[8], 4) == 1 && f[12] == static_cast<uint8_t>(p.hash) &&
         f[13] == 0 && f[14] == 0 && f[15] == 0 && be(&f[16], 8) == p.chunk_size && be(&f[24], 8) == p.total &&
         std::memcmp(&f[32], p.key.bytes.data(), 32) == 0;
}

struct ModelResult {
  std::vector<PieceRecord> held;  // by offset
  size_t kept = 0;                // records read
};

ModelResult model(const std::vector<uint8_t>& f, const JournalParams& p) {
  ModelResult m;
  const uint8_t want = p.hash == wire::HashAlgo::sha256 ? 32 : 16;
  for (size_t at = kH; at + kR <= f.size(); at += kR) {
    const uint8_t* r = &f[at];
    if (!checks(r, kR)) break;
    PieceRecord pr;
    pr.hash.size = r[1];
    pr.offset = be(r + 8, 8);
    pr.length = be(r + 16, 8);
    std::memcpy(pr.hash.bytes.data(), r + 24, 32);
    const bool in_bounds = pr.length > 0 && pr.offset < p.total && pr.length <= p.total - pr.offset;
    const bool held = r[0] == 1 && in_bounds && pr.hash.size == want;
    const bool revoked = r[0] == 2 && in_bounds;
    if (!held && !revoked) break;
    std::erase_if(m.held, [&](const PieceRecord& x) {
      return u128{x.offset} < u128{pr.offset} + pr.length && u128{pr.offset} < u128{x.offset} + x.length;
    });
    if (held) m.held.push_back(pr);
    ++m.kept;
  }
  std::sort(m.held.begin(), m.held.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  return m;
}

bool same(const std::vector<PieceRecord>& a, const std::vector<PieceRecord>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].offset != b[i].offset || a[i].length != b[i].length || !(a[i].hash == b[i].hash)) return false;
  return true;
}

std::vector<uint8_t> read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  std::vector<uint8_t> out(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
  return out;
}

std::unique_ptr<ResumeJournal> open(int dir, const JournalParams& p) {
  auto r = ResumeJournal::open(dir, p);
  auto* j = std::get_if<std::unique_ptr<ResumeJournal>>(&r);
  FUZZ_CHECK(j != nullptr);  // on tmpfs, in a directory of our own: nothing else can fail
  return std::move(*j);
}

}  // namespace

// ResumeJournal::open reserves room for the records to come with a fallocate
// of up to 8 MiB, which on tmpfs allocates real pages: 0.3 ms and more per
// input, hundreds of times the decoding this target is about. The journal
// ignores its result, so the target answers it here (the executable's
// definition wins over libc's) and checks its arguments instead.
extern "C" int fallocate(int, int mode, off_t offset, off_t len) {
  FUZZ_CHECK(mode == FALLOC_FL_KEEP_SIZE);
  FUZZ_CHECK(offset >= static_cast<off_t>(kH) && len > 0 && len <= (8 << 20));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  std::vector<uint8_t> file(data + 1, data + size);
  if (flags & 1) {
    if (file.size() >= kH) reseal(file.data(), kH);
    for (size_t at = kH; at + kR <= file.size(); at += kR) reseal(&file[at], kR);
  }
  JournalParams p = params_from(file);
  if (flags & 2) p.total ^= 1;

  static const int dir = ::open(fuzz::scratch_dir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const auto path = fuzz::scratch_dir() / ResumeJournal::file_name(p.key);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
  }

  const bool readable = header_matches(file, p) &&
                        file.size() <= kH + kR * (2 * (p.total / p.chunk_size) + (1u << 20));
  const ModelResult want = readable ? model(file, p) : ModelResult{};
  std::vector<PieceRecord> loaded;
  {
    auto j = open(dir, p);
    loaded = j->loaded().records();
    FUZZ_CHECK(same(loaded, want.held));
    uint64_t bytes = 0;
    for (const auto& r : loaded) bytes += r.length;
    FUZZ_CHECK(j->loaded().bytes() == bytes);
    const auto now = read_file(path);
    if (readable) {
      FUZZ_CHECK(j->dropped_records() == (file.size() - kH) / kR - want.kept);
      FUZZ_CHECK(now.size() == kH + kR * want.kept && std::equal(now.begin(), now.end(), file.begin()));
    } else {
      FUZZ_CHECK(j->dropped_records() == 0 && now.size() == kH && header_matches(now, p));
    }
    FUZZ_CHECK(j->rewrite(loaded) == 0);
  }
  {
    auto j = open(dir, p);
    FUZZ_CHECK(same(j->loaded().records(), loaded));
    FUZZ_CHECK(j->dropped_records() == 0);
    FUZZ_CHECK(j->remove());
  }
  return 0;
}
