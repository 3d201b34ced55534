#include "sim/session_sim.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <queue>
#include <set>

#include "core/policy_registry.hpp"

namespace braid::sim {

using session::LaneKind;
using session::LaneNo;
using session::LaneTraits;

wire::Digest sim_piece_digest(uint64_t offset, uint64_t length) {
  wire::Digest d;
  d.size = 16;
  uint64_t h = 1469598103934665603ull;
  for (uint64_t v : {offset, length})
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ull;
  for (int i = 0; i < 16; ++i) d.bytes[i] = static_cast<uint8_t>(h >> (8 * (i % 8))) ^ static_cast<uint8_t>(i);
  return d;
}

wire::Digest sim_root_hash(wire::HashAlgo, std::vector<session::PieceRecord> records) {
  std::sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  wire::Digest d;
  d.size = 16;
  uint64_t h = 7;
  for (const auto& r : records) {
    h = h * 31 + r.offset;
    h = h * 31 + r.length;
    for (int i = 0; i < r.hash.size; ++i) h = h * 131 + r.hash.bytes[i];
  }
  for (int i = 0; i < 16; ++i) d.bytes[i] = static_cast<uint8_t>(h >> (8 * (i % 8)));
  return d;
}

namespace {

LaneTraits traits_for(LaneKind k, Duration rtt) {
  switch (k) {
    case LaneKind::udp: return LaneTraits::udp(rtt);
    case LaneKind::stream: return LaneTraits::stream(rtt);
    default: return LaneTraits::tcp(rtt);
  }
}

size_t message_size(const session::ToReceiver& m) {
  if (const auto* o = std::get_if<wire::Offer>(&m)) return 64 + 64 * o->entries.size();
  if (const auto* p = std::get_if<wire::OfferPart>(&m)) return 16 + 64 * p->entries.size();
  return 96;
}

class Run {
 public:
  explicit Run(const SessionScenario& sc) : sc_(sc) {
    session::SenderConfig scfg = sc.sender;
    scfg.rate_limit = sc.rate_limit;
    if (!scfg.root_hash) scfg.root_hash = sim_root_hash;
    session::ReceiverConfig rcfg = sc.receiver;
    if (!rcfg.root_hash) rcfg.root_hash = sim_root_hash;
    sender_.emplace(scfg);
    receiver_.emplace(rcfg);
    for (const auto& p : sc.paths) paths_.push_back(Path{p, p.rate, true});
  }

  SessionRunResult go() {
    // Lane 0: the bootstrap lane on the first path, already authenticated.
    add_lane(0, 0, LaneKind::tcp);
    const Duration rtt0 = paths_[0].spec.rtt;
    sender_->start(LaneTraits::tcp(rtt0), {LaneKind::tcp, paths_[0].spec.name, paths_[0].spec.name, paths_[0].spec.backup, paths_[0].spec.name}, now_);
    receiver_->start(LaneTraits::tcp(rtt0), now_);
    lanes_[0].tx_open = lanes_[0].rx_open = true;
    sender_->add_paths(wanted_paths(), now_);
    for (size_t i = 0; i < sc_.events.size(); ++i) at(Time::zero() + sc_.events[i].at, [this, i] { apply(sc_.events[i]); });
    start_next_transfer();
    report_progress();
    pump();
    const Time stop = Time::zero() + sc_.stop_at;
    // A guard, not a limit a run should meet: a machine that asked to be
    // woken at the same instant forever would otherwise hang the test.
    for (uint64_t steps = 0; !finished_ && steps < 50'000'000; ++steps) {
      std::optional<Time> next;
      if (!events_.empty()) next = events_.top().at;
      const auto st = sender_->poll_timeout();
      const auto rt = receiver_->poll_timeout();
      for (auto t : {st, rt})
        if (t && (!next || *t < *next)) next = t;
      if (!next || *next > stop) {
        now_ = std::max(now_, stop);
        break;
      }
      now_ = std::max(now_, *next);
      if (!events_.empty() && events_.top().at <= now_) {
        Event e = events_.top();
        events_.pop();
        e.fn();
      } else {
        if (st && *st <= now_) sender_->handle_timeout(now_);
        if (rt && *rt <= now_) receiver_->handle_timeout(now_);
      }
      pump();
    }
    return result();
  }

 private:
  struct Item {
    bool piece = false;
    session::ToReceiver msg;
    uint32_t transfer = 0;
    core::PieceId id = 0;
    uint64_t offset = 0, length = 0;
    bool released = true;  // UDP: after its header went (ReleasePiece)
    uint64_t left = 0;     // bytes still to transmit
    bool started = false;
  };
  struct Lane {
    LaneNo id = 0;
    size_t path = 0;
    LaneKind kind = LaneKind::tcp;
    bool tx_open = false, rx_open = false;  // each side's view
    bool broken = false;                     // the connection is gone: nothing more crosses
    bool blackhole = false;                  // UDP blocked on its path: nothing it sends arrives
    std::deque<Item> fwd;
    std::optional<Rate> cap;
    Rate rate_cache;  // the head's rate since the last replan
    Time blocked_until = Time::zero();  // after an outage: TCP's backed-off timer (SimPath::rto)
    Time opened_at = Time::zero();
    Time last_advance;
    uint64_t gen = 0;
    uint64_t delivered = 0;
    std::string close_reason;
  };
  struct Path {
    SimPath spec;
    Rate rate;
    bool up = true;
    bool present = true;  // its interface exists (gone / back)
    Time down_since = Time::never();
  };
  struct Event {
    Time at;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };

  void at(Time t, std::function<void()> fn) { events_.push(Event{t, seq_++, std::move(fn)}); }
  Duration one_way(const Lane& l) const { return paths_[l.path].spec.rtt / 2.0; }
  void note(LaneNo lane, const std::string& what, const std::string& detail) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "t=%.6f lane %u ", now_.to_seconds(), lane);
    notes_.push_back(buf + what + ": " + detail);
  }

  Lane& add_lane(LaneNo id, size_t path, LaneKind kind) {
    Lane l;
    l.id = id;
    l.path = path;
    l.kind = kind;
    l.last_advance = now_;
    l.opened_at = now_;
    lane_index_[id] = lanes_.size();
    lanes_.push_back(std::move(l));
    return lanes_.back();
  }
  Lane* lane(LaneNo id) {
    auto it = lane_index_.find(id);
    return it == lane_index_.end() ? nullptr : &lanes_[it->second];
  }
  size_t path_named(const std::string& name) const {
    for (size_t i = 0; i < paths_.size(); ++i)
      if (paths_[i].spec.name == name) return i;
    return 0;
  }

  Rate rate_of(const Lane& l) const {
    const Path& p = paths_[l.path];
    if (!p.up || l.broken) return Rate::zero();
    if (now_ < l.blocked_until) return Rate::zero();  // waiting for TCP's backed-off retransmission
    Rate r = p.rate;
    if (l.cap && *l.cap < r) r = *l.cap;
    if (p.spec.per_lane && *p.spec.per_lane < r) r = *p.spec.per_lane;
    // Lanes on one path share it: TCP-like fair shares of the link.
    size_t busy = 0;
    for (const auto& o : lanes_)
      if (o.path == l.path && !o.broken && o.tx_open && !o.fwd.empty()) ++busy;
    if (busy > 1) {
      const Rate share = p.rate * (1.0 / static_cast<double>(busy));
      if (share < r) r = share;
    }
    return r;
  }

  // Accounts the head item's progress up to now at the rate it had.
  void advance_all() {
    for (auto& l : lanes_) advance(l);
  }
  void advance(Lane& l) {
    const Duration dt = now_ - l.last_advance;
    l.last_advance = now_;
    if (l.fwd.empty() || dt.ns() <= 0) return;
    Item& head = l.fwd.front();
    if (!head.released) return;
    const uint64_t b = l.rate_cache.bytes_in(dt).count();
    head.left = head.left > b ? head.left - b : 0;
  }
  // Rates changed somewhere (a lane got busy, a path went down): every
  // lane's head transmission is planned again from here.
  void replan() {
    advance_all();
    for (auto& l : lanes_) {
      l.rate_cache = rate_of(l);
      schedule_head(l);
    }
  }
  void schedule_head(Lane& l) {
    const uint64_t g = ++l.gen;
    if (l.fwd.empty() || l.broken || !l.tx_open) return;
    Item& head = l.fwd.front();
    if (!head.released) return;
    if (!head.started) {
      head.started = true;
      if (head.piece) {
        sent_bytes_[head.transfer] += head.length;
        sender_->handle_piece_started(l.id, head.id, now_);
        need_pump_ = true;
      }
    }
    if (l.rate_cache.is_zero()) return;
    const Time done = now_ + l.rate_cache.transfer_time(Bytes(head.left));
    const LaneNo id = l.id;
    at(done, [this, id, g] {
      Lane* x = lane(id);
      if (!x || x->gen != g) return;
      finish_head(*x);
    });
  }
  void finish_head(Lane& l) {
    advance_all();
    Item it = std::move(l.fwd.front());
    l.fwd.pop_front();
    const LaneNo id = l.id;
    const Duration ow = one_way(l);
    if (it.piece) {
      if (l.kind != LaneKind::udp) {
        sender_->handle_piece_hashed(id, it.id, sim_piece_digest(it.offset, it.length), now_);
        sender_->handle_piece_written(id, it.id, now_);
      }
      const Duration took = Rate::bytes_per_sec(std::max(1.0, l.rate_cache.bytes_per_second())).transfer_time(Bytes(it.length));
      at(now_ + ow, [this, id, it, took] { piece_arrived(id, it, took); });
    } else {
      at(now_ + ow, [this, id, m = it.msg] {
        Lane* x = lane(id);
        if (!x || x->broken || !x->rx_open) return;
        receiver_->handle_message(id, m, now_);
      });
    }
    replan();
  }

  void piece_arrived(LaneNo id, const Item& it, Duration took) {
    Lane* l = lane(id);
    if (!l || l->broken || !l->rx_open || l->blackhole) return;
    l->delivered += it.length;
    delivered_total_ += it.length;
    for (auto& t : transfers_)
      if (t.id == it.transfer && !t.ended) t.path_bytes[paths_[l->path].spec.name] += it.length;
    deliveries_.emplace_back(now_, delivered_total_);
    const session::PieceRecord rec{it.offset, it.length, sim_piece_digest(it.offset, it.length)};
    if (l->kind == LaneKind::udp) {
      // Its transport acks every byte on arrival; the receiver verifies once the header is there.
      const Duration ow = one_way(*l);
      const Rate r = l->rate_cache;
      at(now_ + ow, [this, id, piece = it.id, r] {
        Lane* x = lane(id);
        if (!x || x->broken || !x->tx_open) return;
        if (!r.is_zero()) sender_->handle_transport_rate(id, r, now_);
        sender_->handle_piece_delivered(id, piece, now_);
      });
      const auto key = std::make_pair(it.transfer, it.id);
      if (headers_.count(key)) verify(id, it.transfer, it.id, rec, took);
      else udp_waiting_[key] = {id, rec, took};
      return;
    }
    verify(id, it.transfer, it.id, rec, took);
  }
  void verify(LaneNo id, uint32_t transfer, core::PieceId piece, const session::PieceRecord& rec, Duration took) {
    if (!receiver_->piece_verified(transfer, piece)) verified_[transfer].push_back(rec);
    receiver_->handle_piece_verified(id, transfer, piece, rec, took, now_);
  }

  // ---- the engines' side of the actions -------------------------------------------

  void pump() {
    for (bool again = true; again;) {
      again = false;
      need_pump_ = false;
      while (auto a = sender_->poll_action()) {
        again = true;
        std::visit([this](auto& x) { do_sender(x); }, *a);
      }
      while (auto a = receiver_->poll_action()) {
        again = true;
        std::visit([this](auto& x) { do_receiver(x); }, *a);
      }
      again = again || need_pump_;
    }
  }

  void enqueue(Lane& l, Item it) {
    it.left = it.piece ? it.length : message_size(it.msg);
    const bool was_empty = l.fwd.empty();
    l.fwd.push_back(std::move(it));
    if (was_empty) replan();
  }

  void do_sender(session::SendMessage& a) {
    Lane* l = lane(a.lane);
    if (!l || l->broken || !l->tx_open) return;
    Item it;
    it.msg = a.msg;
    enqueue(*l, std::move(it));
  }
  void do_sender(session::OpenLane& a) {
    const size_t p = path_named(a.path.remote);
    Lane& l = lane(a.lane) ? *lane(a.lane) : add_lane(a.lane, p, a.path.kind);
    const LaneNo id = l.id;
    const Duration rtt = paths_[p].spec.rtt;
    if (!a.udp_address.empty()) {  // the receiver's end is open already
      l.tx_open = l.rx_open = true;
      sender_->handle_lane_connected(id, traits_for(l.kind, rtt), now_);
      if (paths_[p].spec.udp_blocked) {
        l.blackhole = true;
        at(now_ + Duration::seconds(2), [this, id] {
          Lane* x = lane(id);
          if (!x || x->broken || !x->tx_open) return;
          x->broken = true;
          x->tx_open = false;
          sender_->handle_lane_failed(id, "no answer over UDP in 2 s (UDP blocked on the path?)", false, now_);
        });
      }
      return;
    }
    if (!paths_[p].up) {  // no route: the connect fails (a timeout, a refusal)
      at(now_ + Duration::seconds(1), [this, id] {
        Lane* x = lane(id);
        if (!x || x->tx_open) return;
        x->broken = true;
        sender_->handle_lane_failed(id, "connect failed: path down", false, now_);
      });
      return;
    }
    const LaneKind kind = l.kind;
    at(now_ + rtt / 2.0, [this, id, kind, rtt] {
      Lane* x = lane(id);
      if (!x || x->broken) return;
      x->rx_open = receiver_->handle_lane_connected(id, traits_for(kind, rtt), now_);
    });
    at(now_ + rtt, [this, id, kind, rtt] {
      Lane* x = lane(id);
      if (!x || x->broken) return;
      x->tx_open = true;
      sender_->handle_lane_connected(id, traits_for(kind, rtt), now_);
    });
  }
  void do_sender(session::CloseLane& a) {
    Lane* l = lane(a.lane);
    if (!l || !l->tx_open) return;
    l->tx_open = false;
    l->fwd.clear();
    l->close_reason = a.reason;
    ++l->gen;
    const LaneNo id = l->id;
    if (l->rx_open && !l->broken)
      at(now_ + one_way(*l), [this, id] {
        Lane* x = lane(id);
        if (!x || !x->rx_open) return;
        x->rx_open = false;
        receiver_->handle_lane_failed(id, "EOF", now_);
      });
    replan();
  }
  void do_sender(session::SendPiece& a) {
    Lane* l = lane(a.lane);
    if (!l || l->broken || !l->tx_open) return;
    Item it;
    it.piece = true;
    it.transfer = a.transfer;
    it.id = a.assign.piece;
    it.offset = a.assign.offset.count();
    it.length = a.assign.length.count();
    if (l->kind == LaneKind::udp) {
      it.released = false;  // read and hashed whole first; the header goes ahead
      it.left = it.length;
      l->fwd.push_back(it);
      sender_->handle_piece_hashed(l->id, it.id, sim_piece_digest(it.offset, it.length), now_);
      need_pump_ = true;
      return;
    }
    enqueue(*l, std::move(it));
  }
  void do_sender(session::ReleasePiece& a) {
    Lane* l = lane(a.lane);
    if (!l) return;
    for (auto& it : l->fwd)
      if (it.piece && it.transfer == a.transfer && it.id == a.piece) it.released = true;
    replan();
  }
  void do_sender(session::CancelPiece& a) {
    Lane* l = lane(a.lane);
    if (!l) return;
    advance_all();
    std::erase_if(l->fwd, [&](const Item& it) { return it.piece && it.transfer == a.transfer && it.id == a.piece; });
    replan();
  }
  void do_sender(session::SetLaneRate& a) {
    if (Lane* l = lane(a.lane)) {
      advance_all();
      l->cap = a.rate;
      replan();
    }
  }
  void do_sender(session::CheckHeld& a) {
    // The simulated source never changes: every held range matches.
    std::vector<wire::HeldRange> matched = a.held;
    for (auto& h : matched) h.hash = sim_piece_digest(h.offset, h.length);
    sender_->handle_held_checked(a.transfer, matched, 0, now_);
  }
  void do_sender(session::TransferEnded& a) {
    for (auto& t : transfers_)
      if (t.id == a.transfer) {
        t.ended = true;
        t.outcome = a.outcome;
        t.ended_at = now_;
        t.all_acked_at = sender_->all_acked_at();
        t.resumed_bytes = sender_->resumed_bytes();
        t.sent_bytes = sent_bytes_[a.transfer];
        for (const auto& v : sender_->lanes())
          if (v.open) t.open_lanes.push_back(v.id);
      }
    // Nothing of that transfer goes on.
    for (auto& l : lanes_) std::erase_if(l.fwd, [&](const Item& it) { return it.piece && it.transfer == a.transfer; });
    replan();
    start_next_transfer();
  }
  void do_sender(session::Note& n) { note(n.lane, n.event, n.detail); }

  void do_receiver(session::RecvSendMessage& a) {
    Lane* l = lane(a.lane);
    if (!l || l->broken || !l->rx_open) return;
    const LaneNo id = l->id;
    // Back: small messages, in order, after the one-way delay (a path that
    // is down holds them: they never arrive if the lane is found dead).
    Time when = std::max(now_ + one_way(*l), back_last_[id]);
    back_last_[id] = when;
    at(when, [this, id, m = a.msg] { back_arrive(id, m); });
  }
  void back_arrive(LaneNo id, const session::ToSender& m) {
    Lane* x = lane(id);
    if (!x || x->broken || !x->tx_open) return;
    if (!paths_[x->path].up || now_ < x->blocked_until) {  // held until the path (and its timer) comes back
      held_back_[id].push_back(m);
      return;
    }
    sender_->handle_message(id, m, now_);
  }
  void do_receiver(session::RecvCloseLane& a) {
    Lane* l = lane(a.lane);
    if (!l || !l->rx_open) return;
    l->rx_open = false;
    const LaneNo id = l->id;
    // Behind whatever the receiver sent on the lane before (a result): TCP keeps the order.
    const Time when = std::max(now_ + one_way(*l), back_last_[id]);
    if (!l->broken)
      at(when, [this, id] {
        Lane* x = lane(id);
        if (!x || x->broken || !paths_[x->path].up) return;  // a dead path carries no FIN either
        fin_at_.emplace(id, now_);  // what the sender's close() waits for
        if (!x->tx_open) return;
        sender_->handle_lane_failed(id, "closed by the peer (EOF)", true, now_);
      });
  }
  void do_receiver(session::PrepareOffer& a) {
    wire::Accept acc;
    acc.transfer_id = a.offer->transfer_id;
    if (a.offer->transfer_id == 1)
      for (auto h : sc_.held) {
        h.hash = sim_piece_digest(h.offset, h.length);
        acc.held.push_back(h);
      }
    receiver_->handle_offer_prepared(a.offer->transfer_id, acc, now_);
  }
  // Part by part (protocol 9, a scenario whose receiver config sets
  // early_answers and whose sender streams its offer): every part fits, its
  // last one closes the offer with the accept (no held ranges: such an
  // offer has none), as the engine's receiver answers.
  void do_receiver(session::PrepareOfferPart& a) {
    if (!a.whole) return receiver_->handle_part_prepared(a.transfer, now_);
    wire::Accept acc;
    acc.transfer_id = a.transfer;
    receiver_->handle_offer_prepared(a.transfer, acc, now_);
  }
  void do_receiver(session::FinalizeTransfer& a) {
    receiver_->handle_finalized(a.transfer, wire::ResultStatus::verified, "verified", now_);
  }
  void do_receiver(session::AbandonTransfer&) {}  // the temporaries stay: receiver_held is what a resume finds
  void do_receiver(session::OpenUdpLane& a) {
    const LaneNo id = a.lane;
    // The sender's lane record exists already (it asked); the path is the one it named.
    if (!lane(id)) add_lane(id, path_named(a.address), LaneKind::udp);
    lane(id)->rx_open = true;
    receiver_->handle_udp_lane_opened(id, "udp:" + a.address, "", now_);
  }
  void do_receiver(session::ExpectPiece& a) {
    const auto key = std::make_pair(a.header.transfer_id, static_cast<core::PieceId>(a.header.piece));
    headers_.insert(key);
    if (auto it = udp_waiting_.find(key); it != udp_waiting_.end()) {
      const auto w = it->second;
      udp_waiting_.erase(it);
      verify(w.lane, key.first, key.second, w.rec, w.took);
    }
  }
  void do_receiver(session::SessionEnded& e) {
    receiver_ended_at_ = now_;
    receiver_end_reason_ = e.reason;
  }
  void do_receiver(session::RecvNote& n) { note(n.lane, "recv " + n.event, n.detail); }

  void start_next_transfer() {
    const int wanted = sc_.probe.empty() ? sc_.transfers : static_cast<int>(sc_.probe.size());
    if (started_ >= wanted) {
      bool all = true;
      for (const auto& t : transfers_) all = all && t.ended;
      if (all && !closing_) {
        closing_ = true;
        closed_at_ = now_;
        for (const auto& v : sender_->lanes())
          if (v.open && v.traits.carries_messages) awaiting_fin_.push_back(v.id);
        sender_->close(now_);
        // Let the bye cross, then stop.
        at(now_ + Duration::seconds(1), [this] { finished_ = true; });
      }
      return;
    }
    session::TransferSpec spec;
    wire::ManifestEntry e;
    e.path = "file" + std::to_string(started_);
    e.size = sc_.size.count();
    spec.entries = {e};
    spec.chunk_size = sc_.chunk.count();
    spec.policy = core::make_policy(sc_.policy);
    const ProbePhase* phase = sc_.probe.empty() ? nullptr : &sc_.probe[static_cast<size_t>(started_)];
    if (phase) {
      spec.discard = true;
      if (!phase->paths.empty()) {
        std::vector<session::PathSpec> only;
        for (const auto& name : phase->paths) only.push_back({paths_[path_named(name)].spec.kind, name, name});
        spec.only_paths = only;
      }
    }
    // The last transfer of the session says goodbye with its done (as `braid send` does).
    spec.last = !phase && started_ + 1 == wanted;
    const auto id = sender_->start_transfer(std::move(spec), now_);
    ++started_;
    if (!id) return;
    if (phase)
      at(now_ + phase->length, [this, id = *id] {
        if (sender_->transfer_running() && transfers_.back().id == id) sender_->cancel_transfer("probe phase over", now_);
      });
    SimTransferResult r;
    r.id = *id;
    r.offered_at = now_;
    transfers_.push_back(r);
  }

  bool lane0_open() const {
    if (!sender_) return true;
    for (const auto& v : sender_->lanes())
      if (v.id == 0) return v.open;
    return true;
  }

  /// What the engine's planner would list: every present path's lanes
  /// (the bootstrap lane counts for the first path).
  std::vector<session::PathSpec> wanted_paths() const {
    std::vector<session::PathSpec> specs;
    for (size_t i = 0; i < paths_.size(); ++i) {
      if (!paths_[i].present) continue;
      const auto& p = paths_[i].spec;
      int n = p.lanes;
      if (i == 0 && p.kind != LaneKind::udp && lane0_open()) n -= 1;
      for (int k = 0; k < n; ++k) specs.push_back({p.kind, p.name, p.name, p.backup, p.name});
    }
    return specs;
  }

  void apply(const PathEvent& e) {
    const size_t p = path_named(e.path);
    switch (e.kind) {
      case PathEvent::Kind::gone:
        advance_all();
        paths_[p].up = false;
        paths_[p].present = false;
        replan();
        sender_->set_paths(wanted_paths(), now_, paths_[0].present);
        break;
      case PathEvent::Kind::back:
        paths_[p].present = true;
        apply(PathEvent{PathEvent::Kind::up, e.at, e.path, e.rate, e.detect});
        sender_->set_paths(wanted_paths(), now_, paths_[0].present);
        break;
      case PathEvent::Kind::rate:
        advance_all();
        paths_[p].rate = e.rate;
        replan();
        break;
      case PathEvent::Kind::kill:
        for (auto& l : lanes_)
          if (l.path == p && !l.broken && (l.tx_open || l.rx_open)) break_lane(l, "connection reset", Duration::zero());
        break;
      case PathEvent::Kind::down:
        advance_all();
        paths_[p].up = false;
        paths_[p].down_since = now_;
        for (auto& l : lanes_)
          if (l.path == p && !l.broken && (l.tx_open || l.rx_open) && e.detect != Duration::infinite())
            break_lane(l, "keepalive: the peer stopped answering", e.detect);
        replan();
        break;
      case PathEvent::Kind::up: {
        paths_[p].up = true;
        const Duration rto = paths_[p].spec.rto;
        if (rto.ns() > 0 && paths_[p].down_since != Time::never()) {
          // Connections open through the outage wait for their backed-off timer.
          Time fire = paths_[p].down_since + rto;
          for (Duration step = rto * 2.0; fire < now_; step = step * 2.0) fire = fire + step;
          for (auto& l : lanes_)
            if (l.path == p && l.kind == LaneKind::tcp && l.opened_at <= paths_[p].down_since) l.blocked_until = fire;
          at(fire, [this, p] {
            replan();
            release_held_back(p);
          });
        }
        paths_[p].down_since = Time::never();
        replan();
        release_held_back(p);
        break;
      }
    }
  }
  void release_held_back(size_t p) {
    for (auto& [id, msgs] : held_back_) {
      Lane* l = lane(id);
      if (!l || l->path != p || now_ < l->blocked_until) continue;
      for (auto& m : msgs) at(now_ + one_way(*l), [this, id = id, m] { back_arrive(id, m); });
      msgs.clear();
    }
  }
  // What the engine reads from each TCP lane's kernel every 50 ms: bytes
  // moving, or nothing outstanding (Sender::handle_transport_progress).
  void report_progress() {
    if (finished_ || closing_ || receiver_ended_at_ != Time::never()) return;
    advance_all();
    for (const auto& l : lanes_) {
      if (l.kind != LaneKind::tcp || l.broken || !l.tx_open) continue;
      // Through an outage (or until TCP's timer fires) a connection that
      // carried data has bytes unacked: no progress, even if the scheduler
      // took its pieces away meanwhile.
      const Path& p = paths_[l.path];
      if (!p.up || now_ < l.blocked_until) continue;
      if (l.fwd.empty() || !rate_of(l).is_zero()) sender_->handle_transport_progress(l.id, now_);
    }
    at(now_ + Duration::millis(50), [this] { report_progress(); });
  }
  void break_lane(Lane& l, const std::string& why, Duration detect) {
    const LaneNo id = l.id;
    at(now_ + detect, [this, id, why] {
      Lane* x = lane(id);
      if (!x || x->broken) return;
      advance_all();
      x->broken = true;
      x->fwd.clear();
      ++x->gen;
      x->close_reason = why;
      const bool tx = x->tx_open, rx = x->rx_open;
      x->tx_open = x->rx_open = false;
      if (tx) sender_->handle_lane_failed(id, why, true, now_);
      if (rx) receiver_->handle_lane_failed(id, why, now_);
      replan();
    });
  }

  SessionRunResult result() {
    SessionRunResult r;
    for (auto& t : transfers_) {
      if (!t.ended) {
        t.all_acked_at = sender_->all_acked_at();
        t.resumed_bytes = sender_->resumed_bytes();
        t.sent_bytes = sent_bytes_[t.id];
      }
      r.transfers.push_back(t);
    }
    const auto views = sender_->lanes();
    for (const auto& l : lanes_) {
      SimLaneResult lr;
      lr.lane = l.id;
      lr.path = paths_[l.path].spec.name;
      lr.kind = l.kind;
      lr.delivered = l.delivered;
      for (const auto& v : views)
        if (v.id == l.id) {
          lr.open_at_end = v.open;
          lr.close_reason = v.close_reason;
        }
      r.lanes.push_back(lr);
    }
    // What an interrupted first transfer leaves: its held ranges and what arrived.
    r.receiver_held = sc_.held;
    for (auto& h : r.receiver_held) h.hash = sim_piece_digest(h.offset, h.length);
    for (const auto& rec : verified_[1]) r.receiver_held.push_back(rec);
    r.end = now_;
    r.deliveries = deliveries_;
    r.notes = notes_;
    r.receiver_ended_at = receiver_ended_at_;
    r.receiver_end_reason = receiver_end_reason_;
    r.sender_closed_at = closed_at_;
    if (closed_at_ != Time::never()) {
      r.sender_end_at = closed_at_;
      const Time limit = closed_at_ + Duration::millis(500);
      for (LaneNo id : awaiting_fin_) {
        const auto f = fin_at_.find(id);
        r.sender_end_at = std::max(r.sender_end_at, f == fin_at_.end() ? limit : std::min(f->second, limit));
      }
    }
    return r;
  }

  const SessionScenario& sc_;
  std::optional<session::Sender> sender_;
  std::optional<session::Receiver> receiver_;
  std::vector<Path> paths_;
  std::vector<Lane> lanes_;
  std::map<LaneNo, size_t> lane_index_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  Time now_ = Time::zero();
  uint64_t seq_ = 0;
  bool need_pump_ = false;
  bool finished_ = false;
  bool closing_ = false;
  int started_ = 0;
  std::vector<SimTransferResult> transfers_;
  std::map<uint32_t, uint64_t> sent_bytes_;
  std::map<uint32_t, std::vector<session::PieceRecord>> verified_;
  std::set<std::pair<uint32_t, core::PieceId>> headers_;
  struct Waiting {
    LaneNo lane;
    session::PieceRecord rec;
    Duration took;
  };
  std::map<std::pair<uint32_t, core::PieceId>, Waiting> udp_waiting_;
  std::map<LaneNo, Time> back_last_;
  std::map<LaneNo, std::vector<session::ToSender>> held_back_;
  uint64_t delivered_total_ = 0;
  std::vector<std::pair<Time, uint64_t>> deliveries_;
  std::vector<std::string> notes_;
  Time receiver_ended_at_ = Time::never();
  std::string receiver_end_reason_;
  Time closed_at_ = Time::never();
  std::vector<LaneNo> awaiting_fin_;  // the sender's message lanes open when it closed
  std::map<LaneNo, Time> fin_at_;      // when the receiver's close of a lane reached the sender
};

}  // namespace

SessionRunResult run_session(const SessionScenario& sc) {
  Run r(sc);
  return r.go();
}

}  // namespace braid::sim
