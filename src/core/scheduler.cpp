#include "core/scheduler.hpp"

#include <algorithm>

namespace braid::core {
namespace {
// For sizing the stall deadline of a lane nothing is known about: slow enough
// that a Bluetooth-class lane (1.5 Mbit/s) is not declared stalled on its
// first piece, and a round trip as long as a geostationary satellite hop's.
constexpr Rate kUnknownLaneDeadlineRate = Rate::mbit(1.0);
constexpr Duration kUnknownLaneRtt = Duration::seconds(1);
}  // namespace

Scheduler::Scheduler(ChunkPlan plan, std::unique_ptr<Policy> policy)
    : plan_(std::move(plan)), policy_(std::move(policy)), rules_(policy_->rules()) {
  copies_.assign(plan_.piece_count(), 0);
}

LaneId Scheduler::add_lane(const LaneConfig& cfg, Time) {
  std::optional<Rate> hint = cfg.rate_hint;
  if (!hint && rules_.default_hint) hint = rules_.default_hint;
  Lane lane{cfg, LaneEstimator(rules_.estimator, hint), {}, {}, true, 0, Time::never(), Time::zero(), Rate{}, Time::never()};
  if (cfg.rtt_hint) lane.est.set_rtt_hint(*cfg.rtt_hint);
  lanes_.push_back(std::move(lane));
  return static_cast<LaneId>(lanes_.size() - 1);
}

Rate Scheduler::planning_rate(LaneId l) const { return lanes_[l].est.rate(); }

Rate Scheduler::room_rate(LaneId l) const { return std::max(planning_rate(l), lanes_[l].transport_rate); }

Duration Scheduler::planning_rtt(LaneId l) const { return lanes_[l].est.srtt(); }

Bytes Scheduler::outstanding(LaneId l) const {
  Bytes b;
  for (const auto& f : lanes_[l].flights)
    if (f.active()) b += f.length;
  return b;
}

size_t Scheduler::active_flights(LaneId l) const {
  return static_cast<size_t>(std::count_if(lanes_[l].flights.begin(), lanes_[l].flights.end(),
                                           [](const Flight& f) { return f.active(); }));
}

Time Scheduler::projected_tx_end(LaneId l, const Flight* target, Time now) const {
  // One transmitter, pieces in the order the lane was given them. An engine
  // lane reports a piece started once it hands it to its socket, so several
  // may be "sending" at once (a TCP lane's kernel holds up to 512 KiB unsent): a
  // piece cannot go out before the ones ahead of it have, whenever it started.
  const Rate r = planning_rate(l);
  Time line = Time::zero();
  for (const auto& f : lanes_[l].flights) {
    if (!f.active()) continue;
    const Time begin = f.state == FlightState::sending ? std::max(line, f.started) : std::max(line, now);
    line = begin + r.transfer_time(f.length);
    if (&f == target) return line;
  }
  return std::max(line, now);
}

Bytes Scheduler::unsent(LaneId l, Time now) const {
  return planning_rate(l).bytes_in(projected_tx_end(l, nullptr, now) - now);
}

Time Scheduler::free_at(LaneId l, Time now) const {
  if (planning_rate(l).is_zero()) return now + Duration::infinite();
  return projected_tx_end(l, nullptr, now);
}

Time Scheduler::completion_if_assigned(LaneId l, Bytes len, Time now) const {
  const Rate r = planning_rate(l);
  if (r.is_zero()) return Time::never();
  return free_at(l, now) + r.transfer_time(len) + planning_rtt(l);
}

Time Scheduler::predicted_ack(LaneId l, const Flight& target, Time now) const {
  if (planning_rate(l).is_zero()) return Time::never();
  return projected_tx_end(l, &target, now) + planning_rtt(l);
}

Time Scheduler::expected_completion(LaneId l, const Flight& target, Time now) const {
  const Time predicted = predicted_ack(l, target, now);
  if (predicted == Time::never()) return predicted;
  if (target.state != FlightState::sending) return predicted;
  // Already later than predicted: assume it is as late again as it is now.
  return predicted > now ? predicted : now + (now - predicted);
}

Flight* Scheduler::find_flight(LaneId lane, PieceId piece) {
  // A lane may hold a stalled copy and a newer live copy of the same piece;
  // the live one is the one being acked or started.
  Flight* stalled = nullptr;
  for (auto& f : lanes_[lane].flights) {
    if (f.piece != piece) continue;
    if (f.active()) return &f;
    stalled = &f;
  }
  return stalled;
}

Time Scheduler::deadline_for(LaneId lane, const Flight& f, Time from) const {
  Rate r = planning_rate(lane);
  if (r.is_zero()) r = rules_.default_hint.value_or(kUnknownLaneDeadlineRate);
  Duration rtt = planning_rtt(lane);
  if (rtt == Duration::zero() && !rules_.stall_cap) rtt = kUnknownLaneRtt;
  Bytes bytes = f.length;
  // Counting from hand-out, the pieces queued ahead are part of the wait.
  if (rules_.deadline_from_assignment) bytes += unsent(lane, from) - f.length;
  Duration expected = (r.transfer_time(bytes) + rtt) * rules_.stall_factor;
  expected = std::max(expected, rules_.min_stall);
  if (rules_.stall_cap) expected = std::min(expected, *rules_.stall_cap);
  return from + expected;
}

void Scheduler::apply(const Pick& p, Time now) {
  PieceId id = p.piece;
  if (p.take_from) {
    // A move: the copy that never left its lane is dropped there (no byte
    // was sent, so no ack can ever come for it) and the piece goes to p.lane.
    for (auto& f : lanes_[*p.take_from].flights) {
      if (f.piece != id || f.state != FlightState::queued) continue;
      drop_copy(*p.take_from, f, now, true);
      release_piece_if_orphaned(id, false);
      break;
    }
    prune(*p.take_from);
  }
  if (p.split_to) id = plan_.split(id, *p.split_to);
  copies_.resize(plan_.piece_count(), 0);
  const Piece& piece = plan_.piece(id);
  plan_.mark_in_flight(id);
  ++copies_[id];
  Lane& lane = lanes_[p.lane];
  Flight f;
  f.piece = id;
  f.length = piece.length;
  f.assigned = now;
  f.duplicate = p.duplicate;
  lane.flights.push_back(f);
  if (rules_.deadline_from_assignment) lane.flights.back().deadline = deadline_for(p.lane, f, now);
  ++lane.stats.assigned;
  actions_.push_back(Assign{p.lane, id, piece.chunk, piece.offset, piece.length, p.duplicate});
}

std::optional<Action> Scheduler::poll_action(Time now) {
  if (actions_.empty() && !plan_.complete()) {
    if (auto p = policy_->pick(*this, now)) apply(*p, now);
  }
  if (actions_.empty()) return std::nullopt;
  Action a = actions_.front();
  actions_.pop_front();
  return a;
}

std::optional<Time> Scheduler::poll_timeout() const {
  Time t = Time::never();
  for (const auto& lane : lanes_) {
    if (!lane.alive) continue;
    for (const auto& f : lane.flights)
      if (f.active() && f.deadline < t) t = f.deadline;
  }
  if (!plan_.complete()) {
    // The policy's own timers (probe back-off) count too.
    if (auto w = policy_->next_wakeup(*this); w && *w < t) t = *w;
  }
  if (t == Time::never()) return std::nullopt;
  return t;
}

void Scheduler::on_send_started(LaneId lane, PieceId piece, Time now) {
  Lane& l = lanes_[lane];
  Flight* f = find_flight(lane, piece);
  if (!f || f->state != FlightState::queued) return;
  bool idle = true;
  for (const auto& other : l.flights)
    if (&other != f && other.state == FlightState::sending) idle = false;
  f->state = FlightState::sending;
  f->started = now;
  f->snap = l.est.on_send(now, idle);
  if (!rules_.deadline_from_assignment) f->deadline = deadline_for(lane, *f, now);
}

void Scheduler::on_transport_rate(LaneId lane, Rate rate, Time now) {
  if (lane >= lanes_.size()) return;
  lanes_[lane].transport_rate = rate;
  lanes_[lane].transport_heard = now;
}

void Scheduler::on_written(LaneId lane, PieceId piece, Time now) {
  if (Flight* f = find_flight(lane, piece)) f->written = now;
}

AckKind Scheduler::on_ack(LaneId lane, PieceId piece, Time now, Duration recv_duration) {
  if (lane >= lanes_.size() || piece >= plan_.piece_count()) return AckKind::unknown;
  Lane& l = lanes_[lane];
  Flight* f = find_flight(lane, piece);
  if (!f) return AckKind::unknown;
  const bool late = !f->active();
  if (f->state == FlightState::queued) {
    // Acked before we heard it started (an engine may report both at once).
    f->snap = l.est.on_send(f->assigned, active_flights(lane) <= 1);
    f->started = f->assigned;
  }
  if (rules_.estimate_from_writes) {
    if (!late) {
      const Time from = f->written == Time::never() ? f->started : f->written;
      // The old estimator's only guard was one microsecond.
      const Duration interval = std::max(now - from, Duration::micros(1));
      l.est.force_rate(Rate::over(f->length, interval));
    }
  } else {
    l.est.on_ack(f->length, f->snap, now, recv_duration, late);
  }

  l.last_acked_start = std::max(l.last_acked_start, f->started);
  // RACK-style loss detection (RFC 8985): a piece this lane started earlier
  // and has still not acked is probably lost. Give it a reorder window of a
  // quarter RTT, then let the stall machinery hand it to another lane, rather
  // than wait out the full stall deadline.
  if (!rules_.deadline_from_assignment && l.cfg.in_order) {
    const Duration reorder = std::max(l.est.srtt() / 4.0, Duration::millis(2));
    for (auto& g : l.flights)
      if (g.state == FlightState::sending && g.started < f->started && g.deadline > now + reorder)
        g.deadline = now + reorder;
  }
  l.stats.acked_bytes += f->length;
  if (l.stats.first_ack == Time::never()) l.stats.first_ack = now;
  l.stats.last_ack = now;
  l.consecutive_stalls = 0;
  if (f->active()) --copies_[piece];
  const bool first = plan_.mark_delivered(piece);
  if (first) {
    l.stats.useful_bytes += f->length;
    ++l.stats.pieces;
    // Every other copy of this piece is now waste: stop it where it is.
    for (LaneId other = 0; other < lanes_.size(); ++other) {
      if (other == lane) continue;
      for (auto& g : lanes_[other].flights)
        if (g.piece == piece && g.active()) drop_copy(other, g, now, true);
    }
  } else {
    ++l.stats.duplicates;
    l.stats.duplicate_bytes += f->length;
  }
  f->state = FlightState::cancelled;
  f->piece = static_cast<PieceId>(-1);  // settled: no later ack can match it
  prune(lane);
  policy_->on_delivery(lane, now);
  return first ? AckKind::first_delivery : AckKind::duplicate;
}

void Scheduler::drop_copy(LaneId lane, Flight& f, Time now, bool emit_cancel) {
  const bool was_sending = f.state == FlightState::sending;
  if (f.active()) --copies_[f.piece];
  if (was_sending) ++lanes_[lane].stats.abandoned;
  if (emit_cancel && lanes_[lane].alive) actions_.push_back(Cancel{lane, f.piece});
  f.state = was_sending ? FlightState::stalled : FlightState::cancelled;
  // A copy dropped before any byte left can never be acked: forget it.
  if (!was_sending) f.piece = static_cast<PieceId>(-1);
  if (!was_sending || !lanes_[lane].alive) return;
  // The lane should start its next piece now. If it cannot (its path went
  // dark while that copy was on the wire), nothing else would ever time the
  // piece out: it inherits the dropped copy's deadline — the lane would
  // have stalled then had it kept that copy — which its start replaces.
  for (auto& g : lanes_[lane].flights) {
    if (g.state == FlightState::sending) return;
    if (g.state == FlightState::queued) {
      if (g.deadline == Time::never()) g.deadline = f.deadline != Time::never() ? f.deadline : deadline_for(lane, g, now);
      return;
    }
  }
}

void Scheduler::release_piece_if_orphaned(PieceId piece, bool bytes_were_sent) {
  if (copies_[piece] > 0) return;
  const PieceState st = plan_.piece(piece).state;
  if (st != PieceState::in_flight) return;
  if (bytes_were_sent) {
    plan_.mark_overdue(piece);
  } else {
    plan_.mark_pending_again(piece);
  }
}

void Scheduler::stall(LaneId lane, Flight& f, Time now) {
  Lane& l = lanes_[lane];
  ++l.stats.stalls;
  // A lane that has since delivered a piece it started *after* this one is
  // moving: this piece was lost, the lane is not slow. Only a lane that went
  // quiet is marked down and left to probes.
  const bool lane_moves = l.last_acked_start > f.started && !rules_.deadline_from_assignment;
  if (!lane_moves) {
    ++l.consecutive_stalls;
    l.last_stall = now;
    // A piece that never started was timed from hand-out (see drop_copy).
    const Time from = rules_.deadline_from_assignment || f.started == Time::never() ? f.assigned : f.started;
    l.est.on_stall(f.length, now - from);
  }

  const PieceId piece = f.piece;
  --copies_[piece];
  actions_.push_back(Cancel{lane, piece});
  // The copy stays known as "stalled": bytes already on the wire may still be
  // acked, and such a late ack still counts and teaches the estimator.
  f.state = FlightState::stalled;
  ++l.stats.abandoned;

  if (rules_.stall_drops_everywhere) {
    for (LaneId other = 0; other < lanes_.size(); ++other) {
      if (other == lane) continue;
      for (auto& g : lanes_[other].flights)
        if (g.piece == piece && g.active()) drop_copy(other, g, now, true);
    }
  }
  release_piece_if_orphaned(piece, true);

  // Pieces queued behind a quiet lane's stalled piece would wait forever.
  if (lane_moves) return policy_->on_stall(lane, now);
  for (auto& g : l.flights) {
    if (g.state != FlightState::queued) continue;
    const PieceId p = g.piece;
    drop_copy(lane, g, now, true);
    release_piece_if_orphaned(p, false);
  }
  policy_->on_stall(lane, now);
}

void Scheduler::on_timeout(Time now) {
  for (LaneId lane = 0; lane < lanes_.size(); ++lane) {
    if (!lanes_[lane].alive) continue;
    for (auto& f : lanes_[lane].flights) {
      if (f.active() && f.deadline <= now) stall(lane, f, now);
    }
    prune(lane);
  }
}

std::vector<std::optional<PieceId>> Scheduler::mark_resumed(const std::vector<ByteRange>& ranges) {
  auto ids = plan_.mark_resumed(ranges);
  copies_.resize(plan_.piece_count(), 0);
  return ids;
}

std::vector<std::optional<PieceId>> Scheduler::extend(Bytes new_total, const std::vector<ByteRange>& delivered) {
  auto ids = plan_.extend(new_total, delivered);
  copies_.resize(plan_.piece_count(), 0);
  return ids;
}

void Scheduler::on_lane_closed(LaneId lane, Time now) {
  Lane& l = lanes_[lane];
  if (!l.alive) return;
  l.alive = false;
  for (auto& f : l.flights) {
    if (!f.active()) continue;
    const PieceId p = f.piece;
    const bool sent = f.state == FlightState::sending;
    drop_copy(lane, f, now, false);
    release_piece_if_orphaned(p, sent);
  }
  l.flights.clear();
}

void Scheduler::prune(LaneId lane) {
  auto& fl = lanes_[lane].flights;
  fl.erase(std::remove_if(fl.begin(), fl.end(),
                          [](const Flight& f) { return f.piece == static_cast<PieceId>(-1); }),
           fl.end());
}

uint32_t Scheduler::total_stalls() const {
  uint32_t n = 0;
  for (const auto& l : lanes_) n += l.stats.stalls;
  return n;
}
uint32_t Scheduler::total_duplicates() const {
  uint32_t n = 0;
  for (const auto& l : lanes_) n += l.stats.duplicates;
  return n;
}
uint32_t Scheduler::total_abandoned() const {
  uint32_t n = 0;
  for (const auto& l : lanes_) n += l.stats.abandoned;
  return n;
}
Bytes Scheduler::duplicate_bytes() const {
  Bytes n;
  for (const auto& l : lanes_) n += l.stats.duplicate_bytes;
  return n;
}

}  // namespace braid::core
