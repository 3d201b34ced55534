#include "engine/files/held_verify.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

namespace braid::files {

HeldVerifyResult verify_held(ReceiveTree& tree, const HeldRanges& claimed, wire::HashAlgo algo,
                             const HeldVerifyOptions& opts) {
  const auto began = std::chrono::steady_clock::now();
  const std::vector<PieceRecord> ranges = claimed.records();
  std::vector<char> ok(ranges.size(), 0);
  std::atomic<size_t> next{0};
  std::atomic<bool> stopped{false};
  auto cancelled = [&] { return opts.cancel && opts.cancel->load(std::memory_order_relaxed); };

  auto work = [&] {
    constexpr uint64_t kBlock = 4u << 20;
    std::vector<uint8_t> buf;
    PieceHasher hasher(algo);
    for (size_t i; (i = next.fetch_add(1)) < ranges.size();) {
      const PieceRecord& r = ranges[i];
      hasher.reset();
      bool read_ok = true;
      for (uint64_t done = 0; done < r.length && read_ok;) {
        if (cancelled()) {
          stopped = true;
          return;
        }
        const uint64_t n = std::min(kBlock, r.length - done);
        buf.resize(n);
        read_ok = tree.read(r.offset + done, buf) == 0;
        if (read_ok) hasher.update(buf);
        done += n;
      }
      ok[i] = read_ok && hasher.finish() == r.hash;
    }
  };

  unsigned threads = opts.threads;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  threads = static_cast<unsigned>(std::min<size_t>(threads, std::max<size_t>(1, ranges.size())));
  std::vector<std::thread> pool;
  for (unsigned k = 1; k < threads; ++k) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();

  HeldVerifyResult out;
  out.cancelled = stopped.load() || cancelled();
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ok[i]) {
      out.verified.add(ranges[i]);
      out.verified_bytes += ranges[i].length;
    } else if (!out.cancelled) {
      out.failed.push_back(ranges[i]);
      out.failed_bytes += ranges[i].length;
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return out;
}

}  // namespace braid::files
