// AES-256-GCM frame sealing and opening on 64 KiB frames, in place, one core.
//   build-security/engine_security_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>
#include <openssl/rand.h>

#include <optional>
#include <vector>

#include "engine/security/frame_crypto.h"

namespace braid::security {
namespace {

struct Fixture {
  explicit Fixture(std::size_t n) : buf(sealed_frame_size(static_cast<std::uint32_t>(n))), size(n) {
    RAND_bytes(secret.data(), static_cast<int>(secret.size()));
    auto k = derive_lane_keys(secret, 1, 0);
    sealer.emplace(std::move(FrameSealer::create(k.value().client_to_server, 1, 0, Direction::client_to_server).value()));
    opener.emplace(std::move(FrameOpener::create(k.value().client_to_server, 1, 0, Direction::client_to_server).value()));
    RAND_bytes(buf.data(), static_cast<int>(buf.size()));
  }
  std::span<std::uint8_t> body() { return std::span(buf).subspan(kFrameHeaderSize, size); }

  LaneSecret secret;
  std::vector<std::uint8_t> buf;
  std::size_t size;
  std::optional<FrameSealer> sealer;
  std::optional<FrameOpener> opener;
};

void BM_Seal(benchmark::State& state) {
  Fixture fx(static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(fx.sealer->seal(1, fx.body(), fx.buf));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

void BM_SealOpen(benchmark::State& state) {
  Fixture fx(static_cast<std::size_t>(state.range(0)));
  OpenedFrame f;
  for (auto _ : state) {
    if (fx.sealer->seal(1, fx.body(), fx.buf) != FrameStatus::ok || fx.opener->open(fx.buf, fx.body(), f) != FrameStatus::ok)
      state.SkipWithError("seal/open failed");
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}

BENCHMARK(BM_Seal)->Arg(64 << 10)->Arg(1 << 20);
BENCHMARK(BM_SealOpen)->Arg(64 << 10)->Arg(256 << 10)->Arg(1 << 20);

}  // namespace
}  // namespace braid::security

BENCHMARK_MAIN();
