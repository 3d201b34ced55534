#include "core/transport/sim/lane_sim.hpp"

#include <algorithm>
#include <cmath>

namespace braid::transport::sim {

namespace {
constexpr uint64_t kPieceSize = uint64_t{1} << 20;  // 1 MiB pieces, as the engine's chunks
constexpr uint64_t kTopUpBytes = 4 * kPieceSize;
// Acks travel an uncongested path; only its delay matters.
constexpr double kReverseRateMbit = 100000;

// A datagram as the engine hands it to a lane once its AEAD tag is checked:
// without the tag. The sim's "tag" is whatever a pooled buffer held before,
// and parsed as frames it once made a forged ack now and then (an RTT sample
// of 30 ms on a 40 ms path, and a lane that shrank its window from there).
std::span<const uint8_t> without_tag(const std::vector<uint8_t>& datagram) {
  return std::span<const uint8_t>(datagram).first(datagram.size() - kAeadTagSize);
}
}  // namespace

struct LaneSim::Flow : DataSink {
  int index = 0;
  FlowSpec spec;
  std::unique_ptr<LaneSender> sender;
  std::unique_ptr<LaneReceiver> receiver;
  std::unique_ptr<BottleneckLink> reverse;
  RangeSet unique_bytes;  // stream offsets received
  uint64_t goodput = 0;
  uint64_t enqueued = 0;
  uint64_t pending_consumed = 0;
  std::vector<uint64_t> bins;
  Time finished = Time::never();
  bool active = false;
  bool gone = false;
  LaneSim* sim = nullptr;

  void on_data(const DataRange& r, std::span<const uint8_t>) override {
    const uint64_t lo = r.piece * kPieceSize + r.offset;
    const uint64_t fresh = unique_bytes.insert(lo, lo + r.length - 1);
    goodput += fresh;
    pending_consumed += fresh;
    sim->add_to_bin(bins, sim->now_, fresh);
  }
};

struct LaneSim::Cbr {
  CbrSpec spec;
  Time next_send;
  std::vector<uint64_t> bins;
};

LaneSim::LaneSim(const SimConfig& cfg) : cfg_(cfg), link_(cfg.link) {}
LaneSim::~LaneSim() = default;

int LaneSim::add_flow(const FlowSpec& spec) {
  auto f = std::make_unique<Flow>();
  f->index = static_cast<int>(flows_.size());
  f->spec = spec;
  f->sim = this;
  SenderConfig sc;
  sc.lane_id = static_cast<uint32_t>(f->index + 1);
  sc.max_datagram_size = spec.packet_size;
  sc.cc = spec.cc_config;
  f->sender = LaneSender::create(sc, spec.cc);
  if (!f->sender) return -1;
  ReceiverConfig rc;
  rc.lane_id = sc.lane_id;
  rc.max_datagram_size = spec.packet_size;
  f->receiver = std::make_unique<LaneReceiver>(rc);
  LinkConfig rev;
  rev.rate = Rate::mbit(kReverseRateMbit);
  rev.one_way_delay = cfg_.link.one_way_delay;
  rev.queue_limit = Bytes::gib(1);
  f->reverse = std::make_unique<BottleneckLink>(rev);
  flows_.push_back(std::move(f));
  return static_cast<int>(flows_.size()) - 1;
}

int LaneSim::add_cbr(const CbrSpec& spec) {
  auto c = std::make_unique<Cbr>();
  c->spec = spec;
  c->next_send = spec.start;
  cbrs_.push_back(std::move(c));
  return static_cast<int>(cbrs_.size()) - 1;
}

void LaneSim::add_to_bin(std::vector<uint64_t>& bins, Time t, uint64_t bytes) const {
  const size_t b = static_cast<size_t>(t.ns() / cfg_.bin.ns());
  if (bins.size() <= b) bins.resize(b + 1, 0);
  bins[b] += bytes;
}

Rate LaneSim::binned_rate(const std::vector<uint64_t>& bins, Time from, Time to) const {
  const size_t b0 = static_cast<size_t>(from.ns() / cfg_.bin.ns());
  const size_t b1 = static_cast<size_t>(to.ns() / cfg_.bin.ns());
  uint64_t sum = 0;
  for (size_t b = b0; b < b1 && b < bins.size(); ++b) sum += bins[b];
  return Rate::over(Bytes(sum), cfg_.bin * static_cast<double>(b1 - b0));
}

std::vector<uint8_t> LaneSim::take_buffer() {
  if (pool_.empty()) return std::vector<uint8_t>(kMaxDatagramSize + kAeadTagSize);
  auto v = std::move(pool_.back());
  pool_.pop_back();
  v.resize(kMaxDatagramSize + kAeadTagSize);
  return v;
}

void LaneSim::top_up(Flow& f) {
  while (f.sender->queued_bytes().count() < kTopUpBytes &&
         (f.spec.total.count() == 0 || f.enqueued < f.spec.total.count())) {
    uint64_t len = kPieceSize;
    if (f.spec.total.count() != 0) len = std::min(len, f.spec.total.count() - f.enqueued);
    f.sender->enqueue(DataRange{f.enqueued / kPieceSize, f.enqueued % kPieceSize,
                                static_cast<uint32_t>(len)});
    f.enqueued += len;
  }
}

void LaneSim::drive_flow(Flow& f) {
  f.sender->on_timeout(now_);
  top_up(f);
  for (;;) {
    auto buf = take_buffer();
    auto t = f.sender->poll_transmit(now_, buf);
    if (!t) {
      pool_.push_back(std::move(buf));
      break;
    }
    // Payload bytes are the engine's business; the simulator leaves them as they are.
    const size_t wire = t->size + kAeadTagSize;
    buf.resize(wire);
    link_.send(now_, SimPacket{f.index, static_cast<uint32_t>(wire), std::move(buf)});
    top_up(f);
  }
  f.receiver->on_timeout(now_);
  for (;;) {
    auto buf = take_buffer();
    auto n = f.receiver->poll_transmit(now_, buf);
    if (!n) {
      pool_.push_back(std::move(buf));
      break;
    }
    buf.resize(*n + kAeadTagSize);
    const uint32_t size = static_cast<uint32_t>(buf.size());
    f.reverse->send(now_, SimPacket{f.index, size, std::move(buf)});
  }
}

Time LaneSim::next_event_time() const {
  Time t = link_.next_arrival();
  t = std::min(t, next_sample_);
  for (const auto& f : flows_) {
    if (f->gone) continue;
    if (!f->active) {
      t = std::min(t, f->spec.start);
      continue;
    }
    t = std::min({t, f->spec.stop, f->reverse->next_arrival(), f->sender->poll_timeout(),
                  f->receiver->poll_timeout()});
  }
  for (const auto& c : cbrs_) {
    if (c->next_send < c->spec.stop) t = std::min(t, c->next_send);
  }
  return t;
}

bool LaneSim::run_until(Time end) {
  uint64_t same_time_iterations = 0;
  for (;;) {
    const Time t = next_event_time();
    if (t > end) {
      now_ = end;
      return true;
    }
    if (t <= now_) {
      if (++same_time_iterations > 100000) return false;
    } else {
      same_time_iterations = 0;
      now_ = t;
    }

    while (auto p = link_.receive(now_)) {
      if (p->flow >= 0) {
        Flow& f = *flows_[static_cast<size_t>(p->flow)];
        if (f.active) {
          const TransportError e = f.receiver->on_datagram_received(now_, without_tag(p->bytes), f);
          if (e != TransportError::ok && e != TransportError::duplicate_packet) ++refused_;
          if (f.pending_consumed) {
            f.receiver->on_data_consumed(Bytes(f.pending_consumed));
            f.pending_consumed = 0;
          }
          if (f.spec.total.count() && f.goodput >= f.spec.total.count() && f.finished == Time::never()) {
            f.finished = now_;
          }
        }
      } else {
        add_to_bin(cbrs_[static_cast<size_t>(-p->flow - 1)]->bins, now_, p->size);
      }
      pool_.push_back(std::move(p->bytes));
    }
    for (auto& fp : flows_) {
      Flow& f = *fp;
      if (f.gone) continue;
      if (!f.active && f.spec.start <= now_) f.active = true;
      if (f.active && f.spec.stop <= now_) {
        f.active = false;
        f.gone = true;
        continue;
      }
      if (!f.active) continue;
      while (auto p = f.reverse->receive(now_)) {
        if (f.sender->on_datagram_received(now_, without_tag(p->bytes)) != TransportError::ok) ++refused_;
        pool_.push_back(std::move(p->bytes));
      }
      drive_flow(f);
    }
    for (size_t i = 0; i < cbrs_.size(); ++i) {
      Cbr& c = *cbrs_[i];
      while (c.next_send <= now_ && c.next_send < c.spec.stop) {
        link_.send(now_, SimPacket{-static_cast<int>(i) - 1,
                                   static_cast<uint32_t>(c.spec.packet_size.count()), {}});
        c.next_send += c.spec.rate.transfer_time(c.spec.packet_size);
      }
    }
    if (next_sample_ <= now_) {
      queue_samples_.push_back({now_, link_.queue_delay(now_)});
      next_sample_ = next_sample_ + cfg_.queue_sample_every;
    }
  }
}

Rate LaneSim::goodput(int flow, Time from, Time to) const {
  return binned_rate(flows_[static_cast<size_t>(flow)]->bins, from, to);
}

uint64_t LaneSim::goodput_bytes(int flow) const { return flows_[static_cast<size_t>(flow)]->goodput; }

Rate LaneSim::cbr_throughput(int cbr, Time from, Time to) const {
  return binned_rate(cbrs_[static_cast<size_t>(cbr)]->bins, from, to);
}

Time LaneSim::completion_time(int flow) const { return flows_[static_cast<size_t>(flow)]->finished; }

std::vector<Duration> LaneSim::queue_delays(Time from, Time to) const {
  std::vector<Duration> out;
  for (const auto& [t, d] : queue_samples_) {
    if (t >= from && t < to) out.push_back(d);
  }
  return out;
}

const LaneSender& LaneSim::sender(int flow) const { return *flows_[static_cast<size_t>(flow)]->sender; }
const LaneReceiver& LaneSim::receiver(int flow) const { return *flows_[static_cast<size_t>(flow)]->receiver; }

Duration percentile(std::vector<Duration> v, double p) {
  if (v.empty()) return Duration::zero();
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace braid::transport::sim
