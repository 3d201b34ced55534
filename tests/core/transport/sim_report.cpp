// Prints the simulated-results table of docs/transport.md: each controller on
// the scenarios, in virtual time (deterministic: same numbers each run).
//   build/transport_sim_report
#include <cstdio>
#include <string>

#include "core/transport/sim/lane_sim.hpp"

using namespace braid;
using namespace braid::transport;
using namespace braid::transport::sim;

namespace {

bool verbose = false;

double mbit(Rate r) { return r.bits_per_second() / 1e6; }

void bufferbloat(const char* cc) {
  SimConfig cfg;
  cfg.link = {Rate::mbit(50), Duration::millis(10), Bytes(2'000'000), 0.0, 1};
  LaneSim sim(cfg);
  FlowSpec f;
  f.cc = cc;
  const int id = sim.add_flow(f);
  sim.run_until(Time::from_ns(Duration::seconds(10).ns()));
  const Time from = Time::from_ns(Duration::seconds(1).ns()), to = Time::from_ns(Duration::seconds(10).ns());
  auto q = sim.queue_delays(from, to);
  std::printf("| bufferbloat 50 Mbit/s, 10 ms, 2 MB queue | %s | %.1f Mbit/s (%.0f %%) | +%.1f / %.1f / %.1f ms | %llu / %llu |\n",
              cc, mbit(sim.goodput(id, from, to)), 100 * mbit(sim.goodput(id, from, to)) / 50,
              percentile(q, 50).to_millis(), percentile(q, 95).to_millis(), percentile(q, 99).to_millis(),
              (unsigned long long)sim.sender(id).stats().data_bytes_retransmitted,
              (unsigned long long)sim.link().stats().bytes_dropped);
}

void lossy(const char* cc, double loss) {
  SimConfig cfg;
  cfg.link = {Rate::mbit(200), Duration::millis(20), Bytes(2'000'000), loss, 7};
  LaneSim sim(cfg);
  FlowSpec f;
  f.cc = cc;
  const int id = sim.add_flow(f);
  const Time end = Time::from_ns(Duration::seconds(8).ns());
  sim.run_until(end);
  const Time from = Time::from_ns(Duration::seconds(2).ns());
  auto q = sim.queue_delays(from, end);
  std::printf("| 200 Mbit/s, 20 ms, %.0f %% loss | %s | %.1f Mbit/s (%.0f %% of rate x (1-loss)) | +%.1f / %.1f / %.1f ms | %llu / %llu |\n",
              loss * 100, cc, mbit(sim.goodput(id, from, end)),
              100 * mbit(sim.goodput(id, from, end)) / (200 * (1 - loss)), percentile(q, 50).to_millis(),
              percentile(q, 95).to_millis(), percentile(q, 99).to_millis(),
              (unsigned long long)sim.sender(id).stats().data_bytes_retransmitted,
              (unsigned long long)sim.link().stats().bytes_dropped);
}

void yielding() {
  SimConfig cfg;
  cfg.link = {Rate::mbit(50), Duration::millis(10), Bytes(2'000'000), 0.0, 3};
  LaneSim sim(cfg);
  FlowSpec bg;
  bg.cc = "background";
  const int b = sim.add_flow(bg);
  FlowSpec tcp;
  tcp.cc = "reno";
  tcp.start = Time::from_ns(Duration::seconds(3).ns());
  tcp.stop = Time::from_ns(Duration::seconds(13).ns());
  const int r = sim.add_flow(tcp);
  sim.run_until(Time::from_ns(Duration::seconds(18).ns()));
  auto s = [](int x) { return Time::from_ns(Duration::seconds(x).ns()); };
  std::printf("| yield 50 Mbit/s, 10 ms, reno 3-13 s | background | alone %.1f; reno 3-5 s %.1f; background 5-13 s %.2f; 15-18 s %.1f Mbit/s | | |\n",
              mbit(sim.goodput(b, s(1), s(3))), mbit(sim.goodput(r, s(3), s(5))),
              mbit(sim.goodput(b, s(5), s(13))), mbit(sim.goodput(b, s(15), s(18))));
  if (!verbose) return;
  for (int t = 0; t < 18; ++t) {
    std::printf("   t=%2d bg %.2f reno %.2f  q=%.1fms\n", t, mbit(sim.goodput(b, s(t), s(t + 1))),
                mbit(sim.goodput(r, s(t), s(t + 1))), percentile(sim.queue_delays(s(t), s(t + 1)), 50).to_millis());
  }
}

void fairness(const char* cc) {
  SimConfig cfg;
  cfg.link = {Rate::mbit(50), Duration::millis(10), Bytes(2'000'000), 0.0, 5};
  LaneSim sim(cfg);
  FlowSpec a;
  a.cc = cc;
  a.cc_config.seed = 1;
  FlowSpec b = a;
  b.cc_config.seed = 2;
  b.start = Time::from_ns(Duration::seconds(1).ns());
  const int x = sim.add_flow(a), y = sim.add_flow(b);
  sim.run_until(Time::from_ns(Duration::seconds(20).ns()));
  auto s = [](int t) { return Time::from_ns(Duration::seconds(t).ns()); };
  const double gx = mbit(sim.goodput(x, s(5), s(20))), gy = mbit(sim.goodput(y, s(5), s(20)));
  auto q = sim.queue_delays(s(5), s(20));
  std::printf("| fairness, 2 flows, 50 Mbit/s, 10 ms (5-20 s) | %s | %.1f + %.1f Mbit/s (shares %.2f / %.2f) | +%.1f / %.1f ms | |\n", cc, gx, gy,
              gx / (gx + gy), gy / (gx + gy), percentile(q, 50).to_millis(), percentile(q, 95).to_millis());
  if (!verbose) return;
  for (int t = 0; t < 20; t += 2) {
    std::printf("   t=%2d a %.2f b %.2f\n", t, mbit(sim.goodput(x, s(t), s(t + 2))), mbit(sim.goodput(y, s(t), s(t + 2))));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string only = argc > 1 ? argv[1] : "";
  verbose = argc > 2;
  std::printf("| scenario | controller | goodput | added delay p50 / p95 / p99 | resent / link-lost bytes |\n|---|---|---|---|---|\n");
  if (only.empty() || only == "bloat") for (const char* cc : {"delay", "background", "reno"}) bufferbloat(cc);
  if (only.empty() || only == "loss") for (const char* cc : {"delay", "reno"}) for (double l : {0.01, 0.05}) lossy(cc, l);
  if (only.empty() || only == "yield") yielding();
  if (only.empty() || only == "fair") fairness("delay");
  return 0;
}
