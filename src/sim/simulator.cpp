#include "sim/simulator.hpp"

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <queue>
#include <variant>

#include "core/policy_registry.hpp"
#include "core/scheduler.hpp"
#include "sim/sim_lane.hpp"

namespace braid::sim {
namespace {

struct TxDone {
  uint64_t generation;  // only the latest scheduled completion of a lane counts
};
struct Arrive {
  core::PieceId piece;
  Duration recv_duration;
  bool lost;
  Rate transport_rate;  // what the lane's transport measured as the piece left
};
struct AckBack {
  core::PieceId piece;
  Duration recv_duration;
  Rate transport_rate;
};
struct ScenarioEvent {
  size_t index;
};
/// A lane with an `rto` whose path came back: its retransmission timer fires.
struct Resume {
  uint64_t outage;  // only the outage it was scheduled for
};
using Payload = std::variant<TxDone, Arrive, AckBack, ScenarioEvent, Resume>;

struct Event {
  Time at;
  uint64_t seq;  // ties broken by insertion order: deterministic
  size_t lane;
  Payload what;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

class Run {
 public:
  Run(const Scenario& sc, std::string_view policy_name, bool trace)
      : trace_(trace),
        sc_(sc),
        sched_(core::ChunkPlan(sc.size, sc.chunk), core::make_policy(policy_name)),
        received_(sched_.plan().chunk_count(), 0) {
    for (size_t i = 0; i < sc.lanes.size(); ++i) {
      const auto& l = sc.lanes[i];
      lanes_.emplace_back(l, sc.seed * 1000003ULL + i);
      sched_.add_lane(core::LaneConfig{l.name, l.hint, std::nullopt}, now_);
    }
    parked_.resize(lanes_.size());
    tx_generation_.resize(lanes_.size(), 0);
    down_at_.resize(lanes_.size(), Time::never());
    outage_.resize(lanes_.size(), 0);
    for (size_t i = 0; i < sc.events.size(); ++i) push(Time::zero() + sc.events[i].at, 0, ScenarioEvent{i});
  }

  RunResult go(const RunOptions& opts) {
    drain();
    while (!sched_.complete()) {
      std::optional<Time> timeout = sched_.poll_timeout();
      const bool have_event = !events_.empty();
      if (!have_event && !timeout) break;  // nothing can ever happen again
      if (timeout && (!have_event || *timeout <= events_.top().at)) {
        now_ = std::max(now_, *timeout);
        if (now_ - Time::zero() > opts.time_limit) break;
        sched_.on_timeout(now_);
      } else {
        Event ev = events_.top();
        events_.pop();
        now_ = ev.at;
        if (now_ - Time::zero() > opts.time_limit) break;
        handle(ev);
      }
      drain();
    }
    return result();
  }

 private:
  void push(Time at, size_t lane, Payload p) { events_.push(Event{at, seq_++, lane, std::move(p)}); }

  // Called after every change to a lane: any earlier completion event is void.
  void schedule_tx(size_t lane) {
    const uint64_t gen = ++tx_generation_[lane];
    if (auto t = lanes_[lane].next_tx_done()) push(*t, lane, TxDone{gen});
  }

  void report_writes() {
    for (const auto& [lane, w] : writes_) sched_.on_written(static_cast<core::LaneId>(lane), w.piece, w.at);
    writes_.clear();
  }

  void started(size_t lane, const std::optional<SimLane::Started>& s) {
    if (s) sched_.on_send_started(static_cast<core::LaneId>(lane), s->piece, now_);
    schedule_tx(lane);
  }

  void drain() {
    while (auto action = sched_.poll_action(now_)) {
      if (trace_) trace(*action);
      if (auto* a = std::get_if<core::Assign>(&*action)) {
        std::vector<SimLane::Written> w;
        auto s = lanes_[a->lane].enqueue(a->piece, a->length, now_, w);
        for (auto& x : w) writes_.push_back({a->lane, x});
        started(a->lane, s);
      } else if (auto* c = std::get_if<core::Cancel>(&*action)) {
        started(c->lane, lanes_[c->lane].cancel(c->piece, now_));
      }
    }
    report_writes();
  }

  void handle(const Event& ev) {
    SimLane& lane = lanes_[ev.lane];
    if (auto* done = std::get_if<TxDone>(&ev.what)) {
      if (done->generation != tx_generation_[ev.lane]) return;  // superseded
      std::optional<SimLane::Started> next;
      std::vector<SimLane::Written> w;
      SimLane::Transmitted t = lane.finish_tx(now_, next, w);
      for (auto& x : w) writes_.push_back({ev.lane, x});
      if (!t.lost) push(t.arrival, ev.lane, Arrive{t.piece, t.recv_duration, false, lane.transport_rate()});
      started(ev.lane, next);
      report_writes();
    } else if (auto* a = std::get_if<Arrive>(&ev.what)) {
      if (lane.gone()) return;
      if (!lane.up()) return parked_[ev.lane].push_back(ev);
      // The receiver keeps the first copy of every piece and discards the rest.
      if (seen_.size() <= a->piece) seen_.resize(sched_.plan().piece_count(), 0);
      if (!seen_[a->piece]++) {
        const auto& piece = sched_.plan().piece(a->piece);
        received_[piece.chunk] += piece.length.count();
      }
      if (lane.ack_lost()) return;
      push(lane.arrival_time(now_, false), ev.lane, AckBack{a->piece, a->recv_duration, a->transport_rate});
    } else if (auto* k = std::get_if<AckBack>(&ev.what)) {
      if (lane.gone()) return;
      if (!lane.up()) return parked_[ev.lane].push_back(ev);
      if (!k->transport_rate.is_zero()) sched_.on_transport_rate(static_cast<core::LaneId>(ev.lane), k->transport_rate, now_);
      const auto kind = sched_.on_ack(static_cast<core::LaneId>(ev.lane), k->piece, now_, k->recv_duration);
      if (trace_)
        std::fprintf(stderr, "%10.6f ack    %-8s piece %u %s est %.1f Mbit/s srtt %.1f ms\n", now_.to_seconds(),
                     sc_.lanes[ev.lane].name.c_str(), k->piece,
                     kind == core::AckKind::first_delivery ? "first" : "dup",
                     sched_.estimator(static_cast<core::LaneId>(ev.lane)).rate().bits_per_second() / 1e6,
                     sched_.estimator(static_cast<core::LaneId>(ev.lane)).srtt().to_millis());
    } else if (auto* s = std::get_if<ScenarioEvent>(&ev.what)) {
      apply_scenario_event(sc_.events[s->index]);
    } else if (auto* r = std::get_if<Resume>(&ev.what)) {
      if (r->outage == outage_[ev.lane] && !lane.gone()) resume(ev.lane);
    }
  }

  void resume(size_t i) {
    SimLane& lane = lanes_[i];
    down_at_[i] = Time::never();
    started(i, lane.set_up(now_));
    // What waited on the wire during the outage arrives now, in order.
    for (Event held : parked_[i]) {
      held.at = lane.arrival_time(now_, std::holds_alternative<Arrive>(held.what));
      held.seq = seq_++;
      events_.push(held);
    }
    parked_[i].clear();
  }

  /// When a lane whose path is back carries data again: at once, or (a
  /// transport with a retransmission timer) when its timer next fires.
  Time resume_at(size_t i) const {
    const Duration rto = sc_.lanes[i].rto;
    if (rto.ns() <= 0 || down_at_[i] == Time::never()) return now_;
    Duration wait = rto, fired = rto;
    while (down_at_[i] + fired < now_ && wait < Duration::seconds(120)) {
      wait = wait * 2.0;
      fired = fired + wait;
    }
    return down_at_[i] + fired;
  }

  void apply_scenario_event(const EventSpec& e) {
    for (size_t i = 0; i < lanes_.size(); ++i) {
      if (sc_.lanes[i].name != e.lane) continue;
      SimLane& lane = lanes_[i];
      switch (e.kind) {
        case EventKind::rate:
          lane.set_rate(e.rate, now_);
          schedule_tx(i);
          break;
        case EventKind::down:
          lane.set_down(now_);
          if (down_at_[i] == Time::never()) down_at_[i] = now_;
          ++outage_[i];  // a resume still pending for an earlier outage is void
          schedule_tx(i);
          break;
        case EventKind::up: {
          const Time at = resume_at(i);
          if (at > now_) push(at, i, Resume{outage_[i]});
          else resume(i);
          break;
        }
        case EventKind::gone:
          lane.set_gone(now_);
          schedule_tx(i);
          parked_[i].clear();
          sched_.on_lane_closed(static_cast<core::LaneId>(i), now_);
          break;
      }
    }
  }

  RunResult result() const {
    RunResult r;
    r.policy = std::string(sched_.policy().name());
    r.completed = sched_.complete();
    r.time = now_ - Time::zero();
    for (uint32_t c = 0; c < received_.size(); ++c)
      if (received_[c] < sched_.plan().chunk_length(c).count()) ++r.lost_chunks;
    r.stalls = sched_.total_stalls();
    r.duplicates = sched_.total_duplicates();
    r.abandoned = sched_.total_abandoned();
    r.duplicate_bytes = sched_.duplicate_bytes();
    r.wasted_bytes = r.duplicate_bytes;
    const double total = sched_.plan().delivered_bytes().as_double();
    for (size_t i = 0; i < lanes_.size(); ++i) {
      const auto lane = static_cast<core::LaneId>(i);
      const auto& st = sched_.stats(lane);
      LaneResult lr;
      lr.name = sc_.lanes[i].name;
      lr.useful_bytes = st.useful_bytes;
      lr.pieces = st.pieces;
      lr.share = total > 0 ? st.useful_bytes.as_double() / total : 0;
      lr.stalls = st.stalls;
      lr.duplicates = st.duplicates;
      lr.abandoned = st.abandoned;
      lr.wire_bytes = lanes_[i].wire_bytes() + lanes_[i].wasted_bytes();
      lr.final_estimate = sched_.estimator(lane).rate();
      r.wasted_bytes += lanes_[i].wasted_bytes();
      r.lanes.push_back(lr);
    }
    return r;
  }

  void trace(const core::Action& action) const {
    if (auto* a = std::get_if<core::Assign>(&action)) {
      std::fprintf(stderr, "%10.6f assign %-8s piece %u chunk %u len %llu%s\n", now_.to_seconds(),
                   sc_.lanes[a->lane].name.c_str(), a->piece, a->chunk,
                   static_cast<unsigned long long>(a->length.count()), a->duplicate ? " dup" : "");
    } else if (auto* c = std::get_if<core::Cancel>(&action)) {
      std::fprintf(stderr, "%10.6f cancel %-8s piece %u\n", now_.to_seconds(), sc_.lanes[c->lane].name.c_str(),
                   c->piece);
    }
  }

  const bool trace_;  // every decision and ack on stderr
  const Scenario& sc_;
  core::Scheduler sched_;
  std::vector<SimLane> lanes_;
  std::vector<uint64_t> received_;  // bytes the receiver holds per chunk (duplicates discarded)
  std::vector<uint32_t> seen_;      // arrivals per piece at the receiver
  std::vector<std::vector<Event>> parked_;
  std::vector<uint64_t> tx_generation_;
  std::vector<Time> down_at_;     // per lane: when its current outage began
  std::vector<uint64_t> outage_;  // per lane: outages so far (a Resume names one)
  std::vector<std::pair<size_t, SimLane::Written>> writes_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  Time now_;
  uint64_t seq_ = 0;
};

}  // namespace

RunResult run(const Scenario& scenario, std::string_view policy, RunOptions opts) {
  Run r(scenario, policy, opts.trace);
  return r.go(opts);
}

}  // namespace braid::sim
