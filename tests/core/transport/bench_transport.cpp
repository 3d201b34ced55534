// How fast the pure lane state machines are: a sender and a receiver back to
// back (no link, no crypto, no syscalls), packets of 1200..9000 bytes, acks
// every second packet. Reported as bytes/s of packets processed per core;
// the UDP lane needs ≥ 2 Gbit/s (250 MB/s) so this is never its bottleneck.
//   build/bench_transport
#include <benchmark/benchmark.h>

#include <vector>

#include "core/transport/lane_receiver.hpp"
#include "core/transport/lane_sender.hpp"

namespace braid::transport {
namespace {

struct NullSink : DataSink {
  uint64_t bytes = 0;
  void on_data(const DataRange& r, std::span<const uint8_t>) override { bytes += r.length; }
};

void BM_SenderReceiverPair(benchmark::State& state) {
  const auto packet = static_cast<uint64_t>(state.range(0));
  SenderConfig sc;
  sc.max_datagram_size = Bytes(packet);
  sc.initial_max_data = Bytes::gib(64);
  ReceiverConfig rc;
  rc.max_datagram_size = Bytes(packet);
  rc.receive_window = Bytes::gib(64);
  auto sender = LaneSender::create(sc, "delay");
  LaneReceiver receiver(rc);
  NullSink sink;
  std::vector<uint8_t> buf(kMaxDatagramSize + kAeadTagSize), ack(kMaxDatagramSize + kAeadTagSize);
  // Virtual time advances as on a 10 Gbit/s path with 100 µs RTT, so the
  // controller opens up and the state machines (not the pacer) are measured.
  const Duration per_packet = Rate::mbit(10000).transfer_time(Bytes(packet));
  Time now = Time::zero();
  uint64_t piece = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    if (sender->queued_bytes().count() < (4u << 20)) sender->enqueue({piece++, 0, 1u << 20});
    now += per_packet;
    sender->on_timeout(now);
    if (auto t = sender->poll_transmit(now, buf)) {
      bytes += t->size + kAeadTagSize;
      receiver.on_datagram_received(now, std::span<const uint8_t>(buf.data(), t->size), sink);
      receiver.on_data_consumed(Bytes(t->size));
      if (auto n = receiver.poll_transmit(now, ack)) {
        sender->on_datagram_received(now, std::span<const uint8_t>(ack.data(), *n));
      }
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["Gbit/s"] = benchmark::Counter(static_cast<double>(bytes) * 8 / 1e9, benchmark::Counter::kIsRate);
  state.counters["lost"] = static_cast<double>(sender->stats().packets_lost);
}
BENCHMARK(BM_SenderReceiverPair)->Arg(1200)->Arg(1452)->Arg(9000);

}  // namespace
}  // namespace braid::transport

BENCHMARK_MAIN();
