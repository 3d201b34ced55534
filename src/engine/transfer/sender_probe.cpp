// `braid probe`'s engine side: discard transfers on a running session, each
// carried by the lanes of some paths only and cancelled after a while, with
// every path's kernel counters sampled as it goes. What the samples mean
// (capacity, delay under load, loss) is worked out in the core
// (core/paths/probe.hpp); the session machine decides everything else, as
// for any transfer.
#include <algorithm>
#include <array>
#include <cstring>

#include "engine/transfer/sender_session.hpp"
#include "engine/transfer/sender_session_active.hpp"

namespace braid::transfer {

namespace {

// A probe's bytes: a fixed pseudo-random MiB, repeated. They cross sealed
// like any piece (the wire sees ciphertext either way) and the receiver
// hashes and drops them; reading them costs one memcpy.
class PatternSource final : public PieceSource {
 public:
  PatternSource(uint32_t id, wire::HashAlgo hash) : id_(id), hash_(hash) {
    static const std::vector<uint8_t> pattern = [] {
      std::vector<uint8_t> p(kSize);
      uint64_t x = 0x9e3779b97f4a7c15ull;
      for (size_t i = 0; i < kSize; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        std::memcpy(p.data() + i, &x, 8);
      }
      return p;
    }();
    pattern_ = &pattern;
  }
  uint32_t transfer_id() const override { return id_; }
  wire::HashAlgo hash() const override { return hash_; }
  bool read(uint64_t offset, uint64_t n, uint8_t* dst, std::string&) override {
    while (n > 0) {
      const size_t at = offset % kSize, take = std::min<uint64_t>(n, kSize - at);
      std::memcpy(dst, pattern_->data() + at, take);
      dst += take, offset += take, n -= take;
    }
    return true;
  }

 private:
  static constexpr size_t kSize = 1 << 20;
  uint32_t id_;
  wire::HashAlgo hash_;
  const std::vector<uint8_t>* pattern_;
};

// A probe phase offers this much and is cancelled long before the end
// (64 GiB: 21 s at 25 Gbit/s), while the scheduler's per-piece state stays
// small (256 Ki pieces of 256 KiB).
constexpr uint64_t kProbeOfferBytes = uint64_t{64} << 30;
constexpr uint64_t kProbeChunk = 256 << 10;

}  // namespace

namespace {

// The probe path a lane on `spec` belongs to: "IFACE -> HOST".
std::string probe_group(const session::PathSpec& spec) {
  std::string remote_host = spec.remote;
  if (auto e = lanes::parse_numeric_endpoint(spec.remote, kDefaultPort)) remote_host = e->host();
  return (spec.interface.empty() ? std::string("?") : spec.interface) + " -> " + remote_host;
}

}  // namespace

std::vector<ProbePath> SenderSession::probe_paths() const {
  std::lock_guard lock(mu_);
  std::vector<ProbePath> out;
  for (const auto& v : machine_->lanes()) {
    if (!v.open || v.path.kind != session::LaneKind::tcp) continue;
    const std::string name = probe_group(v.path);
    auto it = std::find_if(out.begin(), out.end(), [&](const ProbePath& p) { return p.name == name; });
    if (it == out.end()) {
      ProbePath p;
      p.name = name;
      p.interface = name.substr(0, name.find(" -> "));
      p.remote = name.substr(name.find(" -> ") + 4);
      out.push_back(std::move(p));
      it = out.end() - 1;
    }
    it->lanes += 1;
    if (std::none_of(it->specs.begin(), it->specs.end(), [&](const session::PathSpec& s) {
          return s.local == v.path.local && s.remote == v.path.remote && s.kind == v.path.kind;
        }))
      it->specs.push_back(v.path);
    if (v.traits.rtt_hint) {
      const double ms = v.traits.rtt_hint->to_seconds() * 1000;
      it->idle_rtt_ms = it->idle_rtt_ms ? std::min(*it->idle_rtt_ms, ms) : ms;
    }
  }
  return out;
}

ProbePhaseResult SenderSession::probe_phase(const std::vector<ProbePath>& all, const std::vector<size_t>& use,
                                            Duration length) {
  ProbePhaseResult result;
  session::TransferSpec spec;
  spec.entries = {wire::ManifestEntry{wire::EntryKind::file, "probe", kProbeOfferBytes, 0600, 0, 0, {}}};
  spec.chunk_size = kProbeChunk;
  spec.discard = true;
  std::vector<session::PathSpec> only;
  for (size_t i : use) only.insert(only.end(), all[i].specs.begin(), all[i].specs.end());
  spec.only_paths = only;
  std::unique_lock lock(mu_);
  const auto id = machine_->start_transfer(std::move(spec), now());
  if (!id) {
    result.error = "every lane closed before the probe could start";
    return result;
  }
  active_ = std::make_unique<Active>();
  Active& t = *active_;
  t.id = *id;
  t.source = std::make_shared<PatternSource>(t.id, wire::HashAlgo::xxh3_128);
  t.start = now();
  drain_locked();
  // Per lane: its kernel counters at the last sample (a lane that opens
  // during the phase counts from its first sample).
  struct Seen {
    uint64_t acked = 0;
    uint32_t retrans = 0, segs_out = 0;
  };
  std::map<LaneNo, Seen> seen;
  paths::ProbeTick cumulative;
  cumulative.acked.assign(all.size(), 0);
  cumulative.retrans.assign(all.size(), 0);
  cumulative.segs_out.assign(all.size(), 0);
  Time began = Time::never(), next = Time::never();
  auto sample = [&](Time at) {
    paths::ProbeTick tick = cumulative;
    tick.t = (at - began).to_seconds();
    tick.srtt_ms.assign(all.size(), -1);
    std::vector<int> srtt_n(all.size(), 0);
    for (const auto& v : machine_->lanes()) {
      DataLane* l = lane_locked(v.id);
      lanes::TcpKernelInfo k;
      if (!v.open || !l || !l->tcp_info(k)) continue;
      const std::string name = probe_group(v.path);
      const auto it = std::find_if(all.begin(), all.end(), [&](const ProbePath& p) { return p.name == name; });
      if (it == all.end()) continue;
      const size_t g = static_cast<size_t>(it - all.begin());
      auto [s, fresh] = seen.try_emplace(v.id, Seen{k.bytes_acked, k.total_retrans, k.segs_out});
      if (!fresh) {
        tick.acked[g] += k.bytes_acked - std::min(k.bytes_acked, s->second.acked);
        tick.retrans[g] += k.total_retrans - s->second.retrans;
        tick.segs_out[g] += k.segs_out - s->second.segs_out;
        s->second = Seen{k.bytes_acked, k.total_retrans, k.segs_out};
      }
      // Only lanes that carry this phase's data say what its load does to the delay.
      if (v.sched) {
        tick.srtt_ms[g] = (tick.srtt_ms[g] < 0 ? 0 : tick.srtt_ms[g]) + k.rtt_us / 1000.0;
        srtt_n[g] += 1;
      }
    }
    for (size_t g = 0; g < all.size(); ++g)
      if (srtt_n[g] > 0) tick.srtt_ms[g] /= srtt_n[g];
    cumulative = tick;
    result.ticks.push_back(std::move(tick));
  };
  while (!t.outcome) {
    const Time n = now();
    if (began == Time::never() && machine_->scheduler()) {
      began = n;
      next = n;
      sample(n);  // the counters' starting point
      result.ticks.clear();
    }
    if (began != Time::never() && n >= next) {
      next = next + kSampleEvery;
      sample(n);
      if (n - began >= length) {
        machine_->cancel_transfer("probe phase over", n);
        drain_locked();
        break;
      }
    }
    auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
    if (auto to = machine_->poll_timeout()) wake = std::min(wake, epoch_ + std::chrono::nanoseconds(to->ns()));
    plan_wake_locked(wake);
    cv_.wait_until(lock, wake, [&] { return t.outcome || !closed_.empty(); });
    if (!closed_.empty()) {
      lock.unlock();
      bury_closed_lanes();
      lock.lock();
    }
    report_transport_progress_locked();
    machine_->handle_timeout(now());
    drain_locked();
  }
  if (t.outcome && t.outcome->end != session::TransferOutcome::End::cancelled)
    result.error = t.outcome->message.empty() ? "the probe ended early" : t.outcome->message;
  active_.reset();
  return result;
}

}  // namespace braid::transfer
