// cdc_probe: does content-defined chunking pay for braid's sync?
// (issue 18: "fixed 1 MiB boundaries first; content-defined chunking, as in
// rsync's rolling checksum or FastCDC, where an insertion shifts data —
// measure whether it pays"). bench/sync/cdc_run drives it and puts rsync's
// own figures for the same pairs beside it; docs/benchmarks.md has the table.
//
//   cdc_probe make CASE OLD NEW [CORPUS]   writes a pair of versions (seeded)
//   cdc_probe measure OLD NEW               one JSON line: what would cross
//
// Cases (sizes in bytes, `SIZE` env overrides the 1 GiB of the binary ones):
//   inplace    1 GiB of random bytes, 1 % of its 1 MiB chunks rewritten in place
//   insert1    the same file, 100 bytes inserted 4 KiB from its start
//   insert10   the same file, 10 insertions of 100 bytes spread over it
//   append     a 256 MiB text log, 2.56 MiB (1 %) of new lines appended
//   text       CORPUS (text files laid end to end), 200 small edits spread
//              over it (a third each: insert, delete, replace 1..80 bytes)
//
// What crosses, per chunker, counts the new version's chunks the receiver
// cannot build from its old version, plus the list of the receiver's chunk
// hashes (what braid's accept carries: 33 bytes a chunk, offset, length and
// an XXH3-128 hash):
//   fixed      braid today: 1 MiB chunks at fixed offsets, a chunk reused
//              only from the same offset of the old version
//   cdc-N      FastCDC (Xia et al., USENIX ATC 2016): a gear rolling hash,
//              normalized chunking (a harder mask before the average size,
//              an easier one after, "NC level 2"), min = avg / 4,
//              max = avg * 8; a chunk is reused from anywhere in the old
//              version (looked up by hash)
// Chunking speed is measured on the new version in memory (GB/s of one
// core), beside XXH3-128's hashing speed (which every chunker pays anyway).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kHashListEntry = 33;  // u64 offset, u64 length, u8 size + 16-byte hash

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "cdc_probe: %s\n", what.c_str());
  std::exit(1);
}

struct Mapped {
  const uint8_t* data = nullptr;
  size_t size = 0;
  explicit Mapped(const char* path) {
    const int fd = ::open(path, O_RDONLY);
    if (fd < 0) die(std::string("cannot open ") + path);
    struct stat st {};
    ::fstat(fd, &st);
    size = static_cast<size_t>(st.st_size);
    if (size) {
      void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (p == MAP_FAILED) die(std::string("cannot map ") + path);
      data = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
  }
  ~Mapped() {
    if (data) ::munmap(const_cast<uint8_t*>(data), size);
  }
  std::span<const uint8_t> bytes() const { return {data, size}; }
};

void write_file(const char* path, std::span<const uint8_t> b) {
  FILE* f = std::fopen(path, "wb");
  if (!f || std::fwrite(b.data(), 1, b.size(), f) != b.size() || std::fclose(f) != 0)
    die(std::string("cannot write ") + path);
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> out(n);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t v = rng();
    std::memcpy(out.data() + i, &v, 8);
  }
  for (size_t i = n & ~size_t{7}; i < n; ++i) out[i] = static_cast<uint8_t>(rng());
  return out;
}

// A log line: a timestamp, a level, a component and a message with numbers.
std::string log_line(std::mt19937_64& rng, uint64_t t) {
  static const char* levels[] = {"INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"};
  static const char* parts[] = {"sched", "lane", "recv", "offer", "disk", "net"};
  static const char* words[] = {"piece acked",   "lane opened",       "rate estimate", "queue drained",
                                "write done",    "retransmit",        "path planned",  "offer checked",
                                "hash verified", "connection closed", "timer fired",   "window grew"};
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf, "2026-12-03T%02llu:%02llu:%02llu.%06llu %-5s [%s] %s id=%llu bytes=%llu\n",
                              (unsigned long long)(t / 3'600'000'000ULL % 24), (unsigned long long)(t / 60'000'000 % 60),
                              (unsigned long long)(t / 1'000'000 % 60), (unsigned long long)(t % 1'000'000),
                              levels[rng() % 6], parts[rng() % 6], words[rng() % 12],
                              (unsigned long long)(rng() % 100000), (unsigned long long)(rng() % 1048576));
  return std::string(buf, static_cast<size_t>(n));
}

void make_case(const std::string& c, const char* old_path, const char* new_path, const char* corpus) {
  const char* env = std::getenv("SIZE");
  const size_t size = env ? std::strtoull(env, nullptr, 10) : (size_t{1} << 30);
  std::mt19937_64 rng(18);
  if (c == "inplace" || c == "insert1" || c == "insert10") {
    std::vector<uint8_t> old = random_bytes(size, 1);
    write_file(old_path, old);
    std::vector<uint8_t> neu;
    if (c == "inplace") {
      neu = old;
      const size_t chunks = size / kMiB, changed = (chunks + 99) / 100;
      std::vector<size_t> all(chunks);
      for (size_t i = 0; i < chunks; ++i) all[i] = i;
      std::shuffle(all.begin(), all.end(), rng);
      for (size_t k = 0; k < changed; ++k) {
        const auto fresh = random_bytes(kMiB, 100 + k);
        std::memcpy(neu.data() + all[k] * kMiB, fresh.data(), kMiB);
      }
    } else {
      std::vector<size_t> at;
      if (c == "insert1") at = {4096};
      else
        for (size_t k = 0; k < 10; ++k) at.push_back(size / 10 * k + rng() % (size / 10));
      std::sort(at.begin(), at.end());
      neu.reserve(size + 100 * at.size());
      size_t from = 0;
      for (size_t k = 0; k < at.size(); ++k) {
        neu.insert(neu.end(), old.begin() + static_cast<ptrdiff_t>(from), old.begin() + static_cast<ptrdiff_t>(at[k]));
        const auto ins = random_bytes(100, 200 + k);
        neu.insert(neu.end(), ins.begin(), ins.end());
        from = at[k];
      }
      neu.insert(neu.end(), old.begin() + static_cast<ptrdiff_t>(from), old.end());
    }
    write_file(new_path, neu);
  } else if (c == "append") {
    const size_t base = env ? size / 4 : 256 * kMiB;
    std::string log;
    log.reserve(base + base / 50);
    uint64_t t = 0;
    while (log.size() < base) log += log_line(rng, t += rng() % 5000);
    write_file(old_path, {reinterpret_cast<const uint8_t*>(log.data()), log.size()});
    const size_t grown = log.size() + log.size() / 100;
    while (log.size() < grown) log += log_line(rng, t += rng() % 5000);
    write_file(new_path, {reinterpret_cast<const uint8_t*>(log.data()), log.size()});
  } else if (c == "text") {
    if (!corpus) die("the text case needs a CORPUS file");
    Mapped m(corpus);
    std::vector<uint8_t> old(m.data, m.data + m.size);
    write_file(old_path, old);
    // 200 edits at sorted, spread positions, applied back to front so the
    // positions stay those of the old version.
    std::vector<size_t> at;
    for (int k = 0; k < 200; ++k) at.push_back(rng() % old.size());
    std::sort(at.begin(), at.end());
    std::vector<uint8_t> neu = old;
    static const char* snippets[] = {"/* updated */", "int braid_sync = 1;", "// TODO: check this",
                                     "#define BRAID_CDC 1", "return 0;", "static inline"};
    for (size_t k = at.size(); k-- > 0;) {
      const size_t len = 1 + rng() % 80;
      const std::string s = snippets[rng() % 6];
      const auto pos = neu.begin() + static_cast<ptrdiff_t>(at[k]);
      switch (k % 3) {
        case 0: neu.insert(pos, s.begin(), s.end()); break;
        case 1: neu.erase(pos, pos + static_cast<ptrdiff_t>(std::min(len, neu.size() - at[k]))); break;
        default:
          for (size_t i = 0; i < std::min(len, neu.size() - at[k]); ++i) pos[static_cast<ptrdiff_t>(i)] = static_cast<uint8_t>(s[i % s.size()]);
      }
    }
    write_file(new_path, neu);
  } else {
    die("unknown case " + c);
  }
}

// ---- chunkers -------------------------------------------------------------------

struct Chunk {
  uint64_t offset, length;
};

std::vector<Chunk> fixed_chunks(size_t size, uint64_t chunk) {
  std::vector<Chunk> out;
  for (uint64_t o = 0; o < size; o += chunk) out.push_back({o, std::min<uint64_t>(chunk, size - o)});
  return out;
}

/// FastCDC with normalized chunking (level 2). The fingerprint shifts left
/// one bit a byte, so its top bits depend on the last 64 bytes: the masks
/// take top bits, as the paper's spread masks take bits from all over.
class FastCdc {
 public:
  explicit FastCdc(uint64_t avg) : avg_(avg), min_(avg / 4), max_(avg * 8) {
    int bits = 0;
    while ((uint64_t{1} << bits) < avg) ++bits;
    mask_s_ = top_bits(bits + 2);
    mask_l_ = top_bits(bits - 2);
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    for (auto& g : gear_) {  // splitmix64: a fixed table, the same on both ends
      uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      g = z ^ (z >> 31);
    }
  }
  /// The length of the chunk that starts at p (n bytes left).
  size_t cut(const uint8_t* p, size_t n) const {
    if (n <= min_) return n;
    if (n > max_) n = max_;
    const size_t normal = std::min<size_t>(avg_, n);
    uint64_t fp = 0;
    size_t i = min_;
    for (; i < normal; ++i) {
      fp = (fp << 1) + gear_[p[i]];
      if (!(fp & mask_s_)) return i + 1;
    }
    for (; i < n; ++i) {
      fp = (fp << 1) + gear_[p[i]];
      if (!(fp & mask_l_)) return i + 1;
    }
    return n;
  }
  std::vector<Chunk> chunks(std::span<const uint8_t> b) const {
    std::vector<Chunk> out;
    for (size_t o = 0; o < b.size();) {
      const size_t n = cut(b.data() + o, b.size() - o);
      out.push_back({o, n});
      o += n;
    }
    return out;
  }

 private:
  static uint64_t top_bits(int k) { return k <= 0 ? 0 : k >= 64 ? ~0ULL : ~0ULL << (64 - k); }
  uint64_t avg_, min_, max_, mask_s_ = 0, mask_l_ = 0;
  std::array<uint64_t, 256> gear_{};
};

struct H128 {
  uint64_t lo, hi;
  bool operator==(const H128&) const = default;
};
struct H128Hash {
  size_t operator()(const H128& h) const { return h.lo; }
};
H128 hash_of(std::span<const uint8_t> b, const Chunk& c) {
  const XXH128_hash_t h = XXH3_128bits(b.data() + c.offset, c.length);
  return {h.low64, h.high64};
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void measure(const char* old_path, const char* new_path) {
  Mapped o(old_path), n(new_path);
  const auto ob = o.bytes(), nb = n.bytes();
  std::printf("{\"old_bytes\": %zu, \"new_bytes\": %zu", ob.size(), nb.size());
  // XXH3-128 over the whole new version: what hashing costs any chunker.
  {
    const auto t0 = std::chrono::steady_clock::now();
    volatile uint64_t sink = XXH3_128bits(nb.data(), nb.size()).low64;
    (void)sink;
    std::printf(", \"xxh3_gbps\": %.3f", static_cast<double>(nb.size()) / seconds_since(t0) / 1e9);
  }
  // Fixed 1 MiB, same offset (braid's sync today).
  {
    const auto oc = fixed_chunks(ob.size(), kMiB), nc = fixed_chunks(nb.size(), kMiB);
    uint64_t cross = 0, reused = 0;
    for (size_t i = 0; i < nc.size(); ++i) {
      const bool same = i < oc.size() && oc[i].length == nc[i].length && hash_of(ob, oc[i]) == hash_of(nb, nc[i]);
      (same ? reused : cross) += nc[i].length;
    }
    std::printf(", \"fixed-1MiB\": {\"chunks\": %zu, \"data_bytes\": %llu, \"hash_list_bytes\": %llu}", nc.size(),
                (unsigned long long)cross, (unsigned long long)(oc.size() * kHashListEntry));
  }
  for (const uint64_t avg : {kMiB, kMiB / 4, kMiB / 16, kMiB / 64}) {
    const FastCdc cdc(avg);
    const auto t0 = std::chrono::steady_clock::now();
    const auto nc = cdc.chunks(nb);
    const double chunk_s = seconds_since(t0);
    const auto oc = cdc.chunks(ob);
    std::unordered_set<H128, H128Hash> have;
    have.reserve(oc.size() * 2);
    for (const auto& c : oc) have.insert(hash_of(ob, c));
    uint64_t cross = 0;
    for (const auto& c : nc)
      if (!have.count(hash_of(nb, c))) cross += c.length;
    std::printf(", \"cdc-%lluKiB\": {\"chunks\": %zu, \"data_bytes\": %llu, \"hash_list_bytes\": %llu, "
                "\"chunk_gbps\": %.3f}",
                (unsigned long long)(avg / 1024), nc.size(), (unsigned long long)cross,
                (unsigned long long)(oc.size() * kHashListEntry), static_cast<double>(nb.size()) / chunk_s / 1e9);
  }
  std::printf("}\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 5 && std::string(argv[1]) == "make") {
    make_case(argv[2], argv[3], argv[4], argc >= 6 ? argv[5] : nullptr);
    return 0;
  }
  if (argc == 4 && std::string(argv[1]) == "measure") {
    measure(argv[2], argv[3]);
    return 0;
  }
  std::fprintf(stderr, "usage: cdc_probe make CASE OLD NEW [CORPUS] | cdc_probe measure OLD NEW\n");
  return 2;
}
