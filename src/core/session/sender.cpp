#include "core/session/sender.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "core/policy_registry.hpp"
#include "core/session/rate_split.hpp"
#include "core/session/sync.hpp"

namespace braid::session {

namespace {
LaneTraits default_traits(LaneKind k) {
  switch (k) {
    case LaneKind::udp: return LaneTraits::udp();
    case LaneKind::stream: return LaneTraits::stream();
    default: return LaneTraits::tcp();
  }
}
const std::string kPeerClosed = "closed by the receiver: ";
TransferOutcome make_outcome(TransferOutcome::End end, std::string message) {
  TransferOutcome o;
  o.end = end;
  o.message = std::move(message);
  return o;
}
}  // namespace

Sender::Sender(SenderConfig cfg) : cfg_(std::move(cfg)) {}

Sender::Lane* Sender::find(LaneNo id) {
  for (auto& l : lanes_)
    if (l.id == id) return &l;
  return nullptr;
}
const Sender::Lane* Sender::find(LaneNo id) const {
  for (const auto& l : lanes_)
    if (l.id == id) return &l;
  return nullptr;
}

// ---- commands -------------------------------------------------------------------

void Sender::start(const LaneTraits& lane0, const PathSpec& path0, Time now) {
  Lane l;
  l.id = 0;
  l.traits = lane0;
  l.path = path0;
  l.state = LaneState::open;
  l.opened = now;
  l.heard = true;
  l.welcomed = true;
  l.slot = 0;
  slots_.push_back(Slot{path0, LaneNo{0}, true, 0, Time::never(), false, false, false});
  lanes_.push_back(std::move(l));
}

void Sender::add_paths(const std::vector<PathSpec>& paths, Time now) {
  for (const auto& p : paths) {
    if (lanes_.size() + 1 > cfg_.max_lanes) {
      push(Note{"lane_skipped", 0, "more lanes than --max-lanes (" + std::to_string(cfg_.max_lanes) + ")"});
      break;
    }
    any_udp_ = any_udp_ || p.kind == LaneKind::udp;
    slots_.push_back(Slot{p, std::nullopt, false, 0, Time::never(), false, false, false});
    open_slot(slots_.size() - 1, now);
  }
  update_data_lanes(now);
  split_rate(now);
}

void Sender::set_paths(const std::vector<PathSpec>& wanted, Time now, bool bootstrap_path_present) {
  if (closing_) return;
  auto same = [](const PathSpec& a, const PathSpec& b) { return a.local == b.local && a.remote == b.remote; };
  // Match wanted paths to slots one for one (a path listed twice has two).
  std::vector<bool> matched(slots_.size(), false);
  matched[0] = bootstrap_path_present;  // lane 0's path
  std::vector<PathSpec> added;
  for (const auto& p : wanted) {
    bool found = false;
    for (size_t i = 1; i < slots_.size() && !found; ++i) {
      if (matched[i] || slots_[i].removed || slots_[i].extra || !same(slots_[i].path, p)) continue;
      matched[i] = found = true;
      Slot& s = slots_[i];
      if (!s.lane && !s.refused && (s.given_up || s.retry_at != Time::never())) {
        // The network changed: a path that failed may answer now.
        s.given_up = false;
        s.failures = 0;
        s.retry_at = now;
        push(Note{"path_retry", 0, p.local + " -> " + p.remote});
      }
    }
    if (!found) added.push_back(p);
  }
  // A stream growth added stays while its path does.
  for (size_t i = 1; i < slots_.size(); ++i) {
    if (!slots_[i].extra || slots_[i].removed) continue;
    for (size_t j = 0; j < slots_.size() && !matched[i]; ++j)
      matched[i] = matched[j] && !slots_[j].extra && same(slots_[j].path, slots_[i].path);
  }
  // New paths first (a path that returns takes its old slot again), so that
  // what goes below never leaves the transfer without a lane to wait for.
  size_t live = 0;
  for (size_t i = 0; i < slots_.size(); ++i) live += slots_[i].removed || !matched[i] ? 0 : 1;
  for (const auto& p : added) {
    if (live + 1 > cfg_.max_lanes) {
      push(Note{"lane_skipped", 0, "more lanes than --max-lanes (" + std::to_string(cfg_.max_lanes) + ")"});
      break;
    }
    ++live;
    any_udp_ = any_udp_ || p.kind == LaneKind::udp;
    size_t at = slots_.size();
    for (size_t i = 1; i < slots_.size() && at == slots_.size(); ++i)
      if (slots_[i].removed && !slots_[i].refused && !slots_[i].extra && same(slots_[i].path, p)) at = i;
    if (at == slots_.size()) {
      slots_.push_back(Slot{p, std::nullopt, false, 0, Time::never(), false, false, false});
      matched.push_back(true);
    } else {
      slots_[at] = Slot{p, std::nullopt, slots_[at].worked, 0, Time::never(), false, false, false};
      matched[at] = true;
    }
    push(Note{"path_added", 0, p.local + " -> " + p.remote});
    open_slot(at, now);
  }
  // Paths that went away close their lanes at once — unless that would
  // leave no lane for messages at all: then the last ones stay (a blip of
  // the only link must not end the transfer; TCP may ride it out).
  std::vector<size_t> going;
  std::set<LaneNo> leaving;
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (matched[i] || slots_[i].removed) continue;
    going.push_back(i);
    if (slots_[i].lane) leaving.insert(*slots_[i].lane);
  }
  bool other_message_lane = false;
  for (const auto& l : lanes_)
    other_message_lane = other_message_lane ||
                         (l.state == LaneState::open && l.traits.carries_messages && !leaving.count(l.id));
  for (size_t i : going) {
    Slot& s = slots_[i];
    const bool open_lane = s.lane && find(*s.lane) && find(*s.lane)->state != LaneState::closed;
    if (open_lane && !other_message_lane) {
      push(Note{"path_gone_kept", *s.lane, "its path went away, but no other lane is left: kept while it lives"});
      continue;
    }
    s.removed = true;
    s.given_up = true;
    s.retry_at = Time::never();
    push(Note{"path_removed", 0, s.path.local + " -> " + s.path.remote});
    if (s.lane) {
      const LaneNo lane = *s.lane;
      s.lane.reset();
      if (Lane* l = find(lane); l && l->state != LaneState::closed)
        lane_gone(*l, "its path went away (the interface or address is gone or down)", true, now);
    }
  }
  update_data_lanes(now);
  split_rate(now);
  drain_scheduler(now);
}

std::optional<uint32_t> Sender::start_transfer(TransferSpec spec, Time now) {
  if (transfer_running() || closing_) return std::nullopt;
  auto t = std::make_unique<Transfer>();
  t->id = next_transfer_++;
  t->offer.transfer_id = t->id;
  t->offer.hash = spec.hash;
  t->offer.chunk_size = spec.chunk_size;
  t->offer.entries = std::move(spec.entries);
  t->in_place = spec.entries_in_place;
  t->in_place_first = spec.entries_in_place_first;
  for (const auto& e : t->entries())
    if (e.kind == wire::EntryKind::file) t->total_bytes += e.size;
  t->offer.discard = spec.discard;
  t->only_paths = std::move(spec.only_paths);
  t->offer.sync = spec.sync;
  t->policy = spec.policy ? std::move(spec.policy) : core::make_policy("braid");
  t->answer_only = spec.answer_only;
  t->streaming = spec.streamed;
  t->offer.early_answers = spec.streamed && spec.early_pieces && wire::takes_early_answers(cfg_.peer) &&
                           !spec.answer_only && !spec.discard && spec.sync == wire::SyncOptions{};
  t->offer.ordered = t->offer.early_answers && spec.ordered && wire::takes_ordered_entries(cfg_.peer);
  t->offer.verdicts_apart = spec.sync.sync && wire::takes_verdicts_apart(cfg_.peer);
  t->last = spec.last;
  transfer_ = std::move(t);
  if (transfer_->streaming) {
    // The head goes once its frame is full (or the walk is over).
    transfer_->offer_cuts = {0};
    cut_streamed_offer(false, now);
    check_lanes_left(now);
    return transfer_->id;
  }
  // A big offer goes as several frames (protocol 6): the receiver starts
  // checking the first while the rest are still on the way.
  transfer_->offer_cuts = wire::offer_cuts(transfer_->entries().whole(), cfg_.offer_part_bytes);
  // A receiver that cannot read the offer would ignore it: say why instead.
  if (const std::string why = unreadable_by_peer({}); !why.empty()) {
    end_transfer(make_outcome(TransferOutcome::End::unsupported, why));
    return transfer_->id;
  }
  transfer_->frames_sent = transfer_->offer_cuts.size() - 1;
  send_request(Request::Kind::offer,
               wire::offer_head(transfer_->offer, transfer_->entries().whole(), transfer_->offer_cuts), 0, now);
  check_lanes_left(now);
  return transfer_->id;
}

std::string Sender::unreadable_by_peer(const wire::ProtocolNeed& also) const {
  wire::ProtocolNeed need =
      wire::offer_needs(transfer_->offer, transfer_->entries().whole(), transfer_->offer_cuts.size() > 2);
  if (also.version > need.version) need = also;
  return wire::too_old(need, cfg_.peer);
}

void Sender::handle_peer_protocol(const wire::PeerProtocol& peer, Time now, const wire::ProtocolNeed& also) {
  (void)now;
  cfg_.peer = peer;
  if (!transfer_running() || transfer_->streaming) return;  // a streamed offer starts after the addresses
  // A receiver that accepted parts has read them: entries it accepted may
  // have left already (entries_needed_from).
  if (transfer_->early_entries > 0) return;
  // The offer went already, and a receiver that cannot read it ignores it
  // (the engine's session ends with this transfer: nothing is left waiting).
  if (const std::string why = unreadable_by_peer(also); !why.empty())
    return end_transfer(make_outcome(TransferOutcome::End::unsupported, why));
  // A sync's offer sent before the addresses, on a protocol remembered from
  // an earlier session, asked for its verdicts apart: a receiver now older
  // than 11 cannot read that (it ignores the offer), so it goes again
  // without (the receiver refuses a sync it cannot answer in one accept,
  // with the reason).
  if (Transfer& t = *transfer_; t.phase == Transfer::Phase::offered && t.offer.verdicts_apart && !wire::takes_verdicts_apart(peer)) {
    t.offer.verdicts_apart = false;
    for (auto& [r, msg] : requests_)
      if (auto* o = std::get_if<wire::Offer>(&msg); o && r.kind == Request::Kind::offer) {
        o->verdicts_apart = false;
        if (const auto lane = control_lane()) {
          push_request_message(*lane, msg);
          r.sent_on = *lane;
        }
      }
  }
}

namespace {
/// Moves a cursor over the offer's entries (`entry`, which starts at
/// transfer offset `start`) past every entry before `limit` that ends by
/// byte `to`: it stops at the first that holds a byte past `to`.
void advance_past(const EntryWindow& entries, size_t limit, uint64_t to, size_t& entry, uint64_t& start) {
  for (; entry < limit; ++entry) {
    const auto& e = entries[entry];
    const uint64_t size = e.kind == wire::EntryKind::file ? e.size : 0;
    if (start + size > to) break;
    start += size;
  }
}
}  // namespace

bool Sender::answering_part_by_part() const {
  return transfer_ && !transfer_->ended && transfer_->offer.early_answers && transfer_->early_entries > 0 &&
         transfer_->sched;
}

size_t Sender::entries_needed_from() {
  if (!answering_part_by_part()) return 0;
  Transfer& t = *transfer_;
  const auto entries = t.entries();
  size_t need = std::min(t.early_entries, t.hole_entry);
  // A lost lane sends the parts again from the one that holds the first
  // entry not accepted (push_request_message); the head goes from its request.
  if (t.offer_cuts.size() > 1) {
    const auto holder = std::upper_bound(t.offer_cuts.begin(), t.offer_cuts.end(), t.early_entries) - 1;
    if (holder != t.offer_cuts.begin()) need = std::min(need, *holder);
  }
  // Entries whose bytes all lie before the delivered prefix are read no more.
  advance_past(entries, need, t.sched->plan().delivered_prefix().count(), t.done_entry, t.done_start);
  return std::min(need, t.done_entry);
}

bool Sender::offer_answered_so_far() const {
  const Transfer& t = *transfer_;
  return t.streaming && t.offer.early_answers && !t.offer_cuts.empty() && t.early_entries >= t.offer_cuts.back();
}

bool Sender::walk_should_wait(size_t walked, size_t window) {
  // Nothing would free an entry while the receiver does not answer part by part (yet).
  if (!answering_part_by_part() || !transfer_->streaming) return false;
  const size_t need = entries_needed_from();  // 0 too while the first file's bytes are not all acked
  if (walked - need <= window) return false;
  const Transfer& t = *transfer_;
  const bool unaccepted = t.early_entries < t.offer_cuts.back();
  const bool undelivered = t.sched->plan().delivered_prefix() < t.sched->plan().total();
  return unaccepted || undelivered;
}

void Sender::add_entries(std::vector<wire::ManifestEntry> batch, bool last, Time now) {
  if (!transfer_ || transfer_->ended || !transfer_->streaming) return;
  Transfer& t = *transfer_;
  const auto entries = t.entries();
  const auto added = t.in_place ? entries.range(t.measured, entries.size()) : std::span<const wire::ManifestEntry>(batch);
  for (const auto& e : added)
    if (e.kind == wire::EntryKind::file) t.total_bytes += e.size;
  if (!t.in_place)
    t.offer.entries.insert(t.offer.entries.end(), std::make_move_iterator(batch.begin()),
                           std::make_move_iterator(batch.end()));
  cut_streamed_offer(last, now);
}

void Sender::cut_streamed_offer(bool last, Time now) {
  Transfer& t = *transfer_;
  const auto entries = t.entries();
  // As wire::offer_cuts, one entry at a time: a frame is closed when the
  // next entry does not fit, so every frame — the last too — holds one.
  for (; t.measured < entries.size(); ++t.measured) {
    const size_t b = wire::offer_entry_bytes(entries[t.measured]);
    const size_t in_frame = t.measured - t.offer_cuts.back();
    if (in_frame > 0 && (t.frame_bytes + b > cfg_.offer_part_bytes || in_frame >= wire::kMaxManifestEntries)) {
      t.offer_cuts.push_back(t.measured);
      send_offer_frame(t.offer_cuts.size() - 2, false, now);
      t.frame_bytes = 0;
    }
    t.frame_bytes += b;
  }
  if (!last) return;
  t.streaming = false;
  t.offer_cuts.push_back(entries.size());
  send_offer_frame(t.offer_cuts.size() - 2, true, now);
}

void Sender::send_offer_frame(size_t k, bool last, Time now) {
  Transfer& t = *transfer_;
  t.frames_sent = k + 1;
  if (k == 0) {
    wire::Offer head = wire::offer_head(t.offer, t.entries().whole(), t.offer_cuts);  // before any entry left
    head.continued = !last;
    head.early_answers = t.offer.early_answers && !last;
    head.ordered = t.offer.ordered && head.early_answers;
    return send_request(Request::Kind::offer, std::move(head), 0, now);
  }
  auto it = std::find_if(requests_.begin(), requests_.end(),
                         [](const auto& r) { return r.first.kind == Request::Kind::offer; });
  if (it == requests_.end()) return;
  Request& r = it->first;
  // The answer clock starts again with each part: an offer answered whole
  // cannot be answered before its last (a walk of many minutes is no fault
  // of the receiver's), and one answered part by part whose every earlier
  // part was accepted owed nothing meanwhile (its walk waited on its window,
  // or was slow to read). Only a part still unaccepted keeps the clock going.
  if (!t.offer.early_answers || t.early_entries == 0 || t.early_entries >= t.offer_cuts[k])
    r.deadline = now + cfg_.answer_timeout;
  if (r.sent_on == UINT32_MAX) return;  // goes with its head when a message lane opens
  push(SendMessage{r.sent_on, make_offer_part(k)});
  // The receiver answers only after the last part: the wait starts again.
  r.resend_at = now + r.resend_after;
}

wire::OfferPart Sender::make_offer_part(size_t k) const {
  const Transfer& t = *transfer_;
  wire::OfferPart p;
  p.transfer_id = t.id;
  p.first_entry = static_cast<uint32_t>(t.offer_cuts[k]);
  const auto part = t.entries().range(t.offer_cuts[k], t.offer_cuts[k + 1]);
  p.entries.assign(part.begin(), part.end());
  p.last = !t.streaming && k + 2 == t.offer_cuts.size();
  return p;
}

void Sender::close(Time now) {
  if (closing_) return;
  if (transfer_running()) end_transfer(make_outcome(TransferOutcome::End::lanes_lost, "the session was closed"));
  send_control(wire::Bye{}, now);
  closing_ = true;
  for (auto& l : lanes_) {
    if (l.state == LaneState::closed) continue;
    l.state = LaneState::closed;
    l.close_reason = "session closed";
    push(CloseLane{l.id, "session closed"});
  }
  requests_.clear();
}

void Sender::interrupt(const std::string& reason, Time) {
  // On every message lane: the process is about to end, and a lane busy
  // with a piece's frame may not get its turn in time.
  for (const auto& l : lanes_)
    if (l.state == LaneState::open && l.traits.carries_messages) push(SendMessage{l.id, wire::ErrorMessage{0, reason}});
  end_transfer(make_outcome(TransferOutcome::End::interrupted, reason));
}

void Sender::cancel_transfer(const std::string& reason, Time now) {
  if (!transfer_running()) return;
  // TransferEnded drops the transfer's pieces on every lane (a lane in the
  // middle of one aborts it), so no CancelPiece is needed per piece.
  const uint32_t id = transfer_->id;
  end_transfer(make_outcome(TransferOutcome::End::cancelled, reason));
  send_control(wire::Cancel{id, reason}, now);
}

// ---- lanes ----------------------------------------------------------------------

void Sender::open_slot(size_t i, Time now) {
  Slot& s = slots_[i];
  s.retry_at = Time::never();
  Lane l;
  l.id = next_lane_++;
  l.slot = i;
  l.path = s.path;
  l.traits = default_traits(s.path.kind);
  l.state = LaneState::connecting;
  l.deadline = now + cfg_.join_timeout;
  l.data = !s.path.backup;  // update_data_lanes decides once it is open
  s.lane = l.id;
  const LaneNo id = l.id;
  const PathSpec path = l.path;
  lanes_.push_back(std::move(l));
  if (path.kind == LaneKind::udp) {
    // The receiver opens its end first and says where (udp_ready).
    send_request(Request::Kind::udp_open, wire::UdpOpen{id, path.remote}, id, now);
  } else {
    push(OpenLane{id, path, {}});
  }
}

void Sender::handle_lane_connected(LaneNo id, const LaneTraits& traits, Time now) {
  Lane* l = find(id);
  if (!l || l->state != LaneState::connecting || closing_) return;
  l->traits = traits;
  if (traits.carries_messages) {
    // Pipelined (protocol 8): the lane takes pieces right behind its join,
    // not a round trip later with the welcome. Nothing is weaker for it:
    // every frame is sealed with the authenticated session's lane keys, and
    // the receiver reads nothing past a join it has not taken. A refusal
    // (its lane cap) still comes on the lane itself before any welcome;
    // the pieces it held go back to the scheduler like a dead lane's.
    // The join says the older of the two protocols (wire::join_version).
    push(SendMessage{id, wire::LaneJoin{wire::join_version(cfg_.peer), id}});
  }
  lane_open(*l, now);
}

void Sender::lane_open(Lane& l, Time now) {
  l.state = LaneState::open;
  l.deadline = Time::never();
  l.opened = now;
  if (l.replaces) {
    scout_joined(l, now);  // takes a silent lane's place, or closes (no vector growth: `l` stays valid)
    if (l.state != LaneState::open) return;
  }
  if (!l.traits.carries_messages) lane_welcomed(l);  // no join: taken when it connects
  if (l.traits.carries_messages && transfer_running() && !transfer_->udp_headers.empty()) {
    // UDP pieces' headers found no lane that carries messages (the last one
    // died): all of them go on this one, before any request waiting (done
    // must not overtake a header).
    Transfer& t = *transfer_;
    const Lane* cur = t.ordered_lane ? find(*t.ordered_lane) : nullptr;
    if (!cur || cur->state != LaneState::open) {
      t.ordered_lane = l.id;
      for (const auto& h : t.udp_headers) push(SendMessage{l.id, h});
      push(Note{"ordered_lane", l.id, "headers sent again", t.udp_headers.size()});
    }
  }
  // Requests that found no message lane go now.
  if (l.traits.carries_messages)
    for (auto& [req, msg] : requests_)
      if (req.sent_on == UINT32_MAX) {
        req.sent_on = l.id;
        push_request_message(l.id, msg);
        req.resend_after = resend_after(l.id);
        req.resend_at = now + req.resend_after;
      }
  update_data_lanes(now);
  attach(l, now);
  split_rate(now);
  if (transfer_) transfer_->no_lane_since = Time::never();
  drain_scheduler(now);
}

void Sender::lane_welcomed(Lane& l) {
  l.welcomed = true;
  if (l.slot != SIZE_MAX) {
    slots_[l.slot].worked = true;
    slots_[l.slot].failures = 0;
  }
  push(Note{"lane_open", l.id, std::string(lane_kind_name(l.traits.kind)) + " " + l.path.local + "->" + l.path.remote});
}

void Sender::handle_lane_failed(LaneNo id, const std::string& reason, bool heard_peer, Time now) {
  Lane* l = find(id);
  if (!l) return;
  // The receiver closes every lane behind its verdict (each after a copy of
  // it): the session's end, no news of the lane — it stays as the verdict
  // found it (the reports), and close() shuts it.
  if (peer_ends_) return;
  if (l->state == LaneState::closed) {
    // The peer's reason can arrive after we saw the socket close: keep it.
    return;
  }
  l->heard = l->heard || heard_peer;
  l->transport_failed = true;
  lane_gone(*l, reason, true, now);
}

void Sender::lane_gone(Lane& l, const std::string& reason, bool announce, Time now) {
  const LaneState was = l.state;
  const LaneNo id = l.id;
  l.state = LaneState::closed;
  l.close_reason = reason;
  l.deadline = Time::never();
  l.awaiting_hash.clear();
  if (transfer_ && l.sched) {
    // Its pieces go back: sent ones as overdue, queued ones to the front.
    sched().on_lane_closed(*l.sched, now);
    l.sched.reset();
  }
  push(CloseLane{id, reason});
  push(Note{was == LaneState::open && l.welcomed ? "lane_closed" : "lane_failed", id, reason});
  // Only a lane the peer took is news to it; say so over another lane.
  if (announce && !closing_ && !peer_ends_ && was == LaneState::open) send_control(wire::LaneClosed{id, reason}, now);
  std::erase_if(requests_, [&](const auto& r) {
    return r.first.kind == Request::Kind::udp_open && r.first.udp_lane == id;
  });
  resend_requests_from(id, now);
  if (transfer_ && transfer_->ordered_lane == id) {
    transfer_->ordered_lane.reset();
    if (!transfer_->ended && !transfer_->udp_headers.empty()) {
      // The dead lane may have lost headers whose bytes arrived: all again.
      const auto next = control_lane();
      if (next) {
        transfer_->ordered_lane = next;
        for (const auto& h : transfer_->udp_headers) push(SendMessage{*next, h});
        push(Note{"ordered_lane", *next, "headers sent again", transfer_->udp_headers.size()});
      }
    }
  }
  if (l.replaces) {  // a scout that did not get through: the next try in a while
    if (Lane* o = find(*l.replaces); o && o->scout == id) {
      o->scout.reset();
      o->next_scout = now + kScoutEvery;
    }
  }
  // The path: open it again later if it worked once, give it up if it never did.
  const size_t si = l.slot;  // `l` may move when lanes_ grows
  if (si != SIZE_MAX && !closing_ && !peer_ends_ && !slots_[si].removed) {
    Slot& s = slots_[si];
    s.lane.reset();
    const bool refused = reason.rfind("refused by the receiver", 0) == 0;
    if (s.path.kind == LaneKind::udp && !l.heard && !refused) {
      // UDP does not get through on this path (a firewall, a middlebox),
      // though TCP did: a TCP lane takes it.
      s.path.kind = LaneKind::tcp;
      s.retry_at = now;
      push(Note{"udp_fallback", id, "no answer over UDP: a TCP lane takes the path"});
    } else if (refused || !s.worked) {
      s.given_up = true;
      s.refused = refused;
    } else if (++s.failures > cfg_.reopen_attempts) {
      s.given_up = true;
      push(Note{"path_given_up", id, "after " + std::to_string(cfg_.reopen_attempts) + " attempts"});
    } else {
      Duration backoff = cfg_.reopen_backoff;
      for (uint32_t k = 1; k < s.failures && backoff < cfg_.reopen_max_backoff; ++k) backoff = backoff * 2.0;
      s.retry_at = now + std::min(backoff, cfg_.reopen_max_backoff);
    }
  }
  update_data_lanes(now);
  split_rate(now);
  drain_scheduler(now);
  check_lanes_left(now);
}

// Lane 0 carries data unless UDP lanes do: it carries their piece headers
// and acks, which must not queue behind data. It takes data again when no
// UDP lane is left (or opening), rather than leave the transfer to stall.
void Sender::update_data_lanes(Time now) {
  update_bootstrap_data(now);
  // Backup paths carry data only while no other path's lane does.
  bool main_alive = false;
  for (const auto& l : lanes_) main_alive = main_alive || (l.state == LaneState::open && l.data && !l.path.backup);
  for (auto& l : lanes_) {
    if (!l.path.backup || l.state == LaneState::closed || l.data == !main_alive) continue;
    l.data = !main_alive;
    if (!l.data && transfer_ && l.sched) {
      // Its queued and unfinished pieces go to the other lanes: the lane
      // stops sending them now, or the metered link would carry them anyway.
      for (const auto& f : sched().flights(*l.sched))
        if (f.active()) push(CancelPiece{l.id, transfer_->id, f.piece});
      sched().on_lane_closed(*l.sched, now);
      l.sched.reset();
      l.awaiting_hash.clear();
    }
    push(Note{"lane_data", l.id,
              l.data ? "no other path carries data: the backup path does" : "another path carries data: the backup path waits"});
    attach(l, now);
  }
}

void Sender::update_bootstrap_data(Time now) {
  Lane* l0 = find(0);
  if (!l0 || l0->state == LaneState::closed) return;
  bool udp_left = false;
  for (const auto& l : lanes_)
    udp_left = udp_left || (l.traits.kind == LaneKind::udp && l.state != LaneState::closed);
  const bool want = !udp_left;
  if (want == l0->data) return;
  l0->data = want;
  if (!want && transfer_ && l0->sched) {
    sched().on_lane_closed(*l0->sched, now);
    l0->sched.reset();
  }
  push(Note{"lane_data", 0, want ? "no UDP lane left: the bootstrap lane carries data" : "UDP lanes carry the data"});
  attach(*l0, now);
  split_rate(now);
}

// --rate-limit caps the whole transfer and --metered caps an interface's
// lanes: shared by what each lane delivers (core/session/rate_split.hpp).
void Sender::split_rate(Time now) {
  if (!cfg_.rate_limit && cfg_.metered.empty()) return;
  std::vector<double> group_caps;
  std::vector<std::string> groups;
  for (const auto& [iface, cap] : cfg_.metered) {
    groups.push_back(iface);
    group_caps.push_back(cap.bytes_per_second());
  }
  std::vector<size_t> data;
  std::vector<RateClaim> claims;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const Lane& l = lanes_[i];
    if (l.state != LaneState::open || !l.data) continue;
    RateClaim c;
    c.stalled = suspect(l);
    if (l.rate_cap) c.cap = l.rate_cap->bytes_per_second();
    if (transfer_running() && l.sched && sched().estimator(*l.sched).measured())
      c.measured = sched().estimator(*l.sched).rate().bytes_per_second();
    const auto g = std::find(groups.begin(), groups.end(), l.path.interface);
    if (!l.path.interface.empty() && g != groups.end()) c.group = static_cast<int>(g - groups.begin());
    data.push_back(i);
    claims.push_back(c);
  }
  const auto caps = split_rates(cfg_.rate_limit ? std::optional(cfg_.rate_limit->bytes_per_second()) : std::nullopt,
                                group_caps, claims);
  std::vector<std::optional<Rate>> want(lanes_.size());
  for (size_t k = 0; k < data.size(); ++k)
    if (caps[k]) want[data[k]] = Rate::bytes_per_sec(*caps[k]);
  const auto bps = [](const std::optional<Rate>& r) {
    return r ? std::optional(r->bytes_per_second()) : std::nullopt;
  };
  for (size_t i = 0; i < lanes_.size(); ++i) {
    Lane& l = lanes_[i];
    if (l.state != LaneState::open) continue;
    if (!cap_worth_setting(bps(l.rate_cap), bps(want[i]))) continue;
    l.rate_cap = want[i];
    push(SetLaneRate{l.id, want[i]});
  }
  next_split_ = transfer_running() ? now + kSplitEvery : Time::never();
}

bool Sender::suspect(const Lane& l) const {
  return transfer_ && transfer_->sched && !transfer_->ended && l.sched &&
         transfer_->sched->consecutive_stalls(*l.sched) > 0;
}

std::optional<LaneNo> Sender::control_lane() const { return control_lane_except(std::nullopt); }

std::optional<LaneNo> Sender::control_lane_except(std::optional<LaneNo> avoid) const {
  // The live message lane with the lowest RTT its acks measured; before any
  // measurement, the lowest id (the handshake's hint would make the choice a
  // coin toss between lanes of equal paths). A lane that stalled and has
  // delivered nothing since comes last: its path may be dead, and a dead
  // lane keeps the RTT it last measured.
  // A lane not heard for a while when another was (longer than a few of its
  // round trips) is passed over too: after the last acks, a dead lane that
  // had nothing left in flight shows no stall, only silence.
  Time freshest = Time::never();
  for (const auto& l : lanes_)
    if (l.state == LaneState::open && l.last_heard != Time::never() && (freshest == Time::never() || l.last_heard > freshest))
      freshest = l.last_heard;
  std::optional<LaneNo> best;
  double best_rtt = 1e300;
  for (const auto& l : lanes_) {
    if (l.state != LaneState::open || !l.traits.carries_messages || l.id == avoid) continue;
    double rtt = 1e299;
    Duration srtt = Duration::zero();
    if (transfer_ && transfer_->sched && l.sched) {
      const auto& est = transfer_->sched->estimator(*l.sched);
      if (est.measured() && est.srtt().ns() > 0) {
        rtt = est.srtt().to_seconds();
        srtt = est.srtt();
      }
    }
    const Duration patience = std::max(Duration::millis(100), srtt * 4.0);
    const bool quiet = freshest != Time::never() &&
                       (l.last_heard == Time::never() ? true : freshest - l.last_heard > patience);
    if (suspect(l)) rtt += 1e200;
    if (quiet) rtt += 1e100;
    if (!best || rtt < best_rtt) {
      best = l.id;
      best_rtt = rtt;
    }
  }
  return best;
}

Duration Sender::resend_after(LaneNo lane) const {
  // Several round trips of the lane (queueing behind data included), never
  // under 1 s: a repeat costs little, the receiver answers it as before.
  Duration rtt = Duration::zero();
  const Lane* l = find(lane);
  if (l && transfer_ && transfer_->sched && l->sched) rtt = transfer_->sched->planning_rtt(*l->sched);
  if (l && rtt.ns() == 0 && l->traits.rtt_hint) rtt = *l->traits.rtt_hint;
  return std::max(Duration::seconds(1), rtt * 8.0);
}

// A lane that carries messages (or will, once it joins): without one, no
// offer, done or result can cross.
bool Sender::message_lane_open() const {
  for (const auto& l : lanes_)
    if (l.state != LaneState::closed && l.path.kind != LaneKind::udp) return true;
  return false;
}

size_t Sender::open_lanes() const {
  size_t n = 0;
  for (const auto& l : lanes_) n += l.state == LaneState::open;
  return n;
}

bool Sender::expects_connect(LaneNo id) const {
  const Lane* l = find(id);
  return l && l->state == LaneState::connecting && !closing_;
}

size_t Sender::opening_lanes() const {
  size_t n = 0;
  for (const auto& l : lanes_) n += l.state == LaneState::connecting || l.state == LaneState::joining;
  return n;
}

std::optional<LaneNo> Sender::sched_lane(core::LaneId id) const {
  if (!transfer_ || id >= transfer_->sched_lanes.size()) return std::nullopt;
  return transfer_->sched_lanes[id];
}

void Sender::send_control(ToReceiver msg, Time) {
  if (auto lane = control_lane()) push(SendMessage{*lane, std::move(msg)});
}

void Sender::send_request(Request::Kind kind, ToReceiver msg, LaneNo udp_lane, Time now) {
  Request r;
  r.kind = kind;
  r.udp_lane = udp_lane;
  r.deadline = now + (kind == Request::Kind::udp_open ? cfg_.join_timeout : cfg_.answer_timeout);
  const auto lane = control_lane();
  r.sent_on = lane ? *lane : UINT32_MAX;  // sent when a message lane opens
  if (lane) {
    push_request_message(*lane, msg);
    r.resend_after = resend_after(*lane);
    r.resend_at = now + r.resend_after;
  }
  requests_.emplace_back(r, std::move(msg));
}

void Sender::push_request_message(LaneNo lane, const ToReceiver& msg) {
  push(SendMessage{lane, msg});
  // The last transfer's done: the goodbye right behind it, each time.
  const auto* done = std::get_if<wire::Done>(&msg);
  if (done && transfer_ && transfer_->id == done->transfer_id && transfer_->last)
    push(SendMessage{lane, wire::Bye{done->transfer_id}});
  // An offer in parts: the parts follow their head on the same lane, each
  // time it is sent (the receiver ignores the parts it has already). Not
  // those whose every entry it accepted: it has them (a repeated head
  // hears its accept_part again), and on a million entries they are most
  // of the offer. The first part it may lack starts at or before the first
  // entry it has not accepted, so what it holds always ends where the
  // parts sent again begin, or past it.
  const auto* offer = std::get_if<wire::Offer>(&msg);
  if (offer && offer->continued && transfer_ && transfer_->id == offer->transfer_id) {
    const Transfer& t = *transfer_;
    size_t k = 1;
    while (k < t.frames_sent && k + 1 < t.offer_cuts.size() && t.offer_cuts[k + 1] <= t.early_entries) ++k;
    for (; k < t.frames_sent; ++k) push(SendMessage{lane, make_offer_part(k)});
  }
}

void Sender::resend_requests_from(LaneNo dead, Time now) {
  for (auto& [req, msg] : requests_) {
    if (req.sent_on != dead) continue;
    const auto lane = control_lane();
    req.sent_on = lane ? *lane : UINT32_MAX;
    if (!lane) continue;
    push_request_message(*lane, msg);
    req.resend_after = resend_after(*lane);
    req.resend_at = now + req.resend_after;
    push(Note{"request_resent", *lane, "its lane " + std::to_string(dead) + " closed before the answer"});
  }
}

std::vector<Sender::LaneView> Sender::lanes() const {
  std::vector<LaneView> out;
  for (const auto& l : lanes_)
    out.push_back({l.id, l.path, l.traits, l.state == LaneState::open, l.data, l.sched, l.rate_cap, l.close_reason,
                   l.opened});
  return out;
}

// ---- messages ---------------------------------------------------------------------

void Sender::handle_message(LaneNo on, const ToSender& msg, Time now) {
  if (Lane* l = find(on)) {
    l->heard = true;
    l->last_heard = now;
  }
  std::visit(
      [&](const auto& m) {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, wire::LaneWelcome>) {
          Lane* l = find(on);
          if (l && m.lane_id == on && l->state == LaneState::open && !l->welcomed) lane_welcomed(*l);
        } else if constexpr (std::is_same_v<M, wire::LaneClosed>) {
          Lane* l = find(m.lane_id);
          if (!l) return;
          if (l->state == LaneState::closed) {
            // The peer's reason can arrive after we saw the socket close: it
            // is the one worth keeping (a forged frame, its disk) — not when
            // we closed it ourselves (its path went, a stream added nothing).
            if (l->transport_failed && l->close_reason.rfind(kPeerClosed, 0) != 0) {
              l->close_reason = kPeerClosed + m.reason;
              push(Note{"lane_closed", l->id, l->close_reason});
            }
            return;
          }
          // Said on the joining lane itself, before a welcome: the receiver refused it (its lane cap).
          if (!l->welcomed && m.lane_id == on)
            return lane_gone(*l, "refused by the receiver: " + m.reason, false, now);
          lane_gone(*l, kPeerClosed + m.reason, false, now);
        } else if constexpr (std::is_same_v<M, wire::UdpReady>) {
          const auto it = std::find_if(requests_.begin(), requests_.end(), [&](const auto& r) {
            return r.first.kind == Request::Kind::udp_open && r.first.udp_lane == m.lane_id;
          });
          if (it == requests_.end()) return;
          requests_.erase(it);
          Lane* l = find(m.lane_id);
          if (!l || l->state != LaneState::connecting) return;
          if (m.address.empty()) return lane_gone(*l, "refused by the receiver: " + m.error, false, now);
          push(OpenLane{l->id, l->path, m.address});
        } else if constexpr (std::is_same_v<M, wire::Accept> || std::is_same_v<M, wire::Refuse>) {
          if (!transfer_ || transfer_->ended || m.transfer_id != transfer_->id ||
              (transfer_->phase != Transfer::Phase::offered && !transfer_->awaiting_final))
            return;
          // An accept before the last part answers an offer the receiver has
          // not seen whole: not one we sent. A refusal counts at any time.
          if (std::is_same_v<M, wire::Accept> && transfer_->streaming)
            return end_transfer(make_outcome(TransferOutcome::End::peer_error,
                                             "the receiver accepted the offer before its last part"));
          std::erase_if(requests_, [](const auto& r) { return r.first.kind == Request::Kind::offer; });
          transfer_->offer_cuts = {};  // answered: never sent again
          transfer_->frames_sent = 0;
          transfer_->streaming = false;
          if constexpr (std::is_same_v<M, wire::Refuse>) {
            // Also after early answers (a later part did not fit the disk):
            // the pieces in flight are dropped with the transfer.
            TransferOutcome o = make_outcome(TransferOutcome::End::refused, m.message);
            o.refusal = m.reason;
            return end_transfer(std::move(o));
          } else if (transfer_->awaiting_final) {
            // Answered part by part: the closing accept has nothing to add
            // but the rest of the entries (a resume or a sync is not
            // answered early, so it holds no ranges and no verdicts).
            Transfer& t = *transfer_;
            if (!m.held.empty() || !m.files.empty() || m.extraneous_count)
              return end_transfer(make_outcome(TransferOutcome::End::peer_error,
                                               "the receiver's closing accept holds ranges or verdicts"));
            t.awaiting_final = false;
            t.early_entries = t.entries().size();
            t.early_bytes = t.total_bytes;
            grow_plan(t, Bytes(t.total_bytes));
            push(Note{"accepted_whole", on, "the rest of the offer, after its parts"});
            drain_scheduler(now);
            return;
          }
          if constexpr (std::is_same_v<M, wire::Accept>) {
            // The verdicts that came ahead of it (protocol 11), then its own.
            std::vector<wire::FileDecision> files = std::exchange(transfer_->files_ahead, {});
            files.insert(files.end(), m.files.begin(), m.files.end());
            if (const std::string bad = sync::check_decisions(transfer_->entries().whole(), transfer_->offer.sync.sync, files);
                !bad.empty()) {
              end_transfer(make_outcome(TransferOutcome::End::peer_error, bad));
            } else if (transfer_->answer_only) {
              TransferOutcome o = make_outcome(TransferOutcome::End::answered, "accepted");
              o.accepted = true;
              o.held = m.held;
              o.files = std::move(files);
              o.extraneous_count = m.extraneous_count;
              o.extraneous = m.extraneous;
              end_transfer(std::move(o));
            } else {
              Transfer& t = *transfer_;
              t.kept = sync::kept_records(t.entries().whole(), t.offer.chunk_size, files);
              t.files = std::move(files);
              t.extraneous_count = m.extraneous_count;
              t.sched = std::make_unique<core::Scheduler>(
                  core::ChunkPlan(Bytes(t.total_bytes), Bytes(t.offer.chunk_size)), std::move(t.policy));
              t.hashes.assign(t.sched->plan().piece_count(), std::nullopt);
              if (!m.held.empty()) {
                t.phase = Transfer::Phase::checking;
                push(CheckHeld{t.id, m.held});
              } else {
                handle_held_checked(t.id, {}, 0, now);
              }
            }
          }
        } else if constexpr (std::is_same_v<M, wire::AcceptPart>) {
          early_accept(m, on, now);
        } else if constexpr (std::is_same_v<M, wire::AcceptFiles>) {
          if (!transfer_ || transfer_->ended || m.transfer_id != transfer_->id || transfer_->phase != Transfer::Phase::offered)
            return;
          // Only ahead of the accept of a whole offer the receiver has seen
          // (not one answered part by part: that holds no verdicts), in
          // order, and no more than the offer has entries.
          Transfer& t = *transfer_;
          if (!t.offer.verdicts_apart || t.streaming || t.awaiting_final || t.early_entries > 0)
            return end_transfer(make_outcome(TransferOutcome::End::peer_error,
                                             "the receiver sent verdicts ahead of an accept the offer did not ask so"));
          // The whole answer comes again to an offer sent again (its first
          // answer was late, or its lane died), maybe on another lane, so
          // two copies may interleave; each comes in order, and the copies
          // are the same. So a frame not after the last verdict held is one
          // held already.
          if (!t.files_ahead.empty() && m.files.front().entry <= t.files_ahead.back().entry) return;
          if (t.files_ahead.size() + m.files.size() > t.entries().size())
            return end_transfer(make_outcome(TransferOutcome::End::peer_error, "the receiver sent more verdicts than the offer has entries"));
          t.files_ahead.insert(t.files_ahead.end(), m.files.begin(), m.files.end());
          // The receiver works, and its lane is alive: no copy of the offer
          // (and of these megabytes) again for now.
          for (auto& [r, msg] : requests_)
            if (r.kind == Request::Kind::offer && r.sent_on != UINT32_MAX) r.resend_at = now + r.resend_after;
        } else if constexpr (std::is_same_v<M, wire::Ack>) {
          if (!transfer_ || transfer_->ended || !transfer_->sched || m.transfer_id != transfer_->id) return;
          if (m.status == wire::AckStatus::hash_mismatch)
            return end_transfer(make_outcome(TransferOutcome::End::bad_piece, "the receiver's hash of piece " + std::to_string(m.piece) +
                                     " did not match (did a file change while it was sent?)"));
          if (m.status != wire::AckStatus::ok) return;  // write failures come with a result
          const Lane* l = find(on);
          if (!l || !l->sched || l->traits.transport_acks || m.piece >= sched().plan().piece_count()) return;
          sched().on_ack(*l->sched, m.piece, now, Duration::nanos(static_cast<int64_t>(m.recv_duration_ns)));
          drain_scheduler(now);
        } else if constexpr (std::is_same_v<M, wire::LaneAck>) {
          if (!transfer_ || transfer_->ended || !transfer_->sched || m.ack.transfer_id != transfer_->id) return;
          if (m.ack.status == wire::AckStatus::hash_mismatch)
            return end_transfer(make_outcome(TransferOutcome::End::bad_piece, "the receiver's hash of piece " + std::to_string(m.ack.piece) +
                                     " did not match (did a file change while it was sent?)"));
          const Lane* l = find(m.lane_id);
          if (!l || !l->sched || l->traits.transport_acks || m.ack.status != wire::AckStatus::ok ||
              m.ack.piece >= sched().plan().piece_count())
            return;
          sched().on_ack(*l->sched, m.ack.piece, now, Duration::nanos(static_cast<int64_t>(m.ack.recv_duration_ns)));
          drain_scheduler(now);
        } else if constexpr (std::is_same_v<M, wire::TransferResult>) {
          if (!transfer_ || transfer_->ended || m.transfer_id != transfer_->id) return;
          // The goodbye went with its done: the receiver's lanes close right behind this.
          peer_ends_ = transfer_->last && transfer_->done_sent;
          if (m.status == wire::ResultStatus::verified) credit_in_flight(now);
          TransferOutcome o = make_outcome(TransferOutcome::End::result, m.message);
          o.result = m.status;
          end_transfer(std::move(o));
        } else if constexpr (std::is_same_v<M, wire::ErrorMessage>) {
          if (transfer_running())
            end_transfer(make_outcome(TransferOutcome::End::peer_error, "the receiver ended the session: " + m.message));
        } else if constexpr (std::is_same_v<M, wire::Addresses>) {
          // The bootstrap lane's first frame is read by the engine before
          // start(); a later one means the receiver's addresses changed: the
          // engine plans the paths again (set_paths).
          if (m.endpoints == peer_addresses_) return;
          peer_addresses_ = m.endpoints;
          std::string shown;
          for (const auto& a : m.endpoints) shown += (shown.empty() ? "" : " ") + a;
          push(Note{"peer_addresses", on, shown});
        }
      },
      msg);
}

// ---- transfers --------------------------------------------------------------------

void Sender::early_accept(const wire::AcceptPart& m, LaneNo on, Time now) {
  if (!transfer_ || transfer_->ended || m.transfer_id != transfer_->id) return;
  Transfer& t = *transfer_;
  if (t.phase != Transfer::Phase::offered && !t.awaiting_final) return;  // answered whole already: late
  if (!t.offer.early_answers)
    return end_transfer(make_outcome(TransferOutcome::End::peer_error,
                                     "the receiver answered part of an offer that did not ask for it"));
  if (m.entries <= t.early_entries) return;  // said again (the offer went again on a new lane)
  // Entries in the frames sent so far: the receiver cannot have checked more.
  const size_t sent = t.frames_sent < t.offer_cuts.size() ? t.offer_cuts[t.frames_sent] : 0;
  if (m.entries > sent)
    return end_transfer(make_outcome(TransferOutcome::End::peer_error,
                                     "the receiver accepted entries of the offer not sent yet"));
  const auto entries = t.entries();
  for (size_t i = t.early_entries; i < m.entries; ++i)
    if (entries[i].kind == wire::EntryKind::file) t.early_bytes += entries[i].size;
  t.early_entries = m.entries;
  // The receiver works, and its lane is alive: the offer's clocks start again.
  for (auto& [r, msg] : requests_)
    if (r.kind == Request::Kind::offer) {
      r.deadline = now + cfg_.answer_timeout;
      if (r.sent_on != UINT32_MAX) r.resend_at = now + r.resend_after;
    }
  // Only whole chunks: the chunk that holds the accepted bytes' end may
  // still grow with the next part, and a piece sent means the same bytes for good.
  const uint64_t chunk = t.offer.chunk_size;
  const uint64_t open = t.early_bytes / chunk * chunk;
  push(Note{"accepted_part", on, std::to_string(m.entries) + " entries, " + std::to_string(open) + " bytes may go"});
  if (open == 0) return;
  if (!t.sched) {
    t.awaiting_final = true;
    t.sched = std::make_unique<core::Scheduler>(core::ChunkPlan(Bytes(open), Bytes(chunk)), std::move(t.policy));
    t.hashes.assign(t.sched->plan().piece_count(), std::nullopt);
    t.kept = holes_up_to(t, 0, open);  // the receiver records them at its closing accept
    return handle_held_checked(t.id, {}, 0, now);
  }
  if (Bytes(open) <= t.sched->plan().total()) return;
  grow_plan(t, Bytes(open));
  drain_scheduler(now);
}

void Sender::grow_plan(Transfer& t, Bytes total) {
  const uint64_t from = t.sched->plan().total().count();
  const auto holes = holes_up_to(t, from, total.count());
  std::vector<core::ByteRange> ranges;
  for (const auto& h : holes) ranges.push_back({Bytes(h.offset), Bytes(h.length)});
  const auto ids = t.sched->extend(total, ranges);
  t.hashes.resize(t.sched->plan().piece_count());
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i]) {
      t.hashes[*ids[i]] = holes[i].hash;
      t.kept_bytes += holes[i].length;
    }
}

std::vector<wire::HeldRange> Sender::holes_up_to(Transfer& t, uint64_t from, uint64_t to) {
  const auto entries = t.entries();
  if (t.hole_entry >= t.early_entries) return {};
  auto out =
      sync::holes_between(entries.range(t.hole_entry, t.early_entries), t.hole_start, t.offer.chunk_size, from, to);
  // Past every entry that ends by `to`: the next call starts at the one that holds it.
  advance_past(entries, t.early_entries, to, t.hole_entry, t.hole_start);
  return out;
}

void Sender::handle_held_checked(uint32_t id, const std::vector<wire::HeldRange>& matched, uint64_t rejected,
                                 Time now) {
  if (!transfer_ || transfer_->ended || transfer_->id != id || !transfer_->sched) return;
  Transfer& t = *transfer_;
  if (t.phase == Transfer::Phase::sending) return;
  // The files the receiver keeps are delivered as they are, like held
  // ranges but unchecked (the receiver's quick check, as rsync's) and
  // without a hash; they come after the checked ranges, so a held range
  // that overlaps one (a receiver that contradicts itself) wins and the
  // kept record is sent.
  std::vector<wire::HeldRange> all = matched;
  all.insert(all.end(), t.kept.begin(), t.kept.end());
  std::vector<core::ByteRange> ranges;
  for (const auto& h : all) ranges.push_back({Bytes(h.offset), Bytes(h.length)});
  const auto ids = t.sched->mark_resumed(ranges);
  t.hashes.resize(t.sched->plan().piece_count());
  t.resume_rejected_bytes = rejected;
  t.held_resent = rejected > 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool kept = i >= matched.size();
    if (!ids[i]) {  // overlaps another range: sent again
      if (!kept) t.resume_rejected_bytes += all[i].length;
      t.held_resent = true;
      continue;
    }
    t.hashes[*ids[i]] = all[i].hash;
    if (kept) {
      t.kept_bytes += all[i].length;
    } else {
      t.resumed_bytes += all[i].length;
      ++t.resumed_ranges;
      t.reused.push_back(all[i]);
    }
  }
  std::sort(t.reused.begin(), t.reused.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  t.phase = Transfer::Phase::sending;
  for (auto& l : lanes_) {
    if (l.progress_at != Time::never()) l.progress_at = now;  // silence counts from here
    attach(l, now);
  }
  drain_scheduler(now);
  growth_.delivered.clear();
  growth_.next = cfg_.max_streams > 0 && !t.only_paths && !t.answer_only ? now : Time::never();
}

void Sender::attach(Lane& l, Time now) {
  if (!transfer_ || transfer_->ended || transfer_->phase != Transfer::Phase::sending) return;
  if (l.state != LaneState::open || !l.data || l.sched || !path_allowed(l)) return;
  core::LaneConfig cfg;
  cfg.name = "lane" + std::to_string(l.id);
  cfg.in_order = l.traits.in_order;
  cfg.rtt_hint = l.traits.rtt_hint;
  cfg.rate_hint = l.traits.rate_hint;
  const core::LaneId sid = sched().add_lane(cfg, now);
  l.sched = sid;
  if (transfer_->sched_lanes.size() <= sid) transfer_->sched_lanes.resize(sid + 1);
  transfer_->sched_lanes[sid] = l.id;
}

// ---- streams that follow what helps -------------------------------------------------

Duration Sender::growth_window() const {
  Duration rtt = Duration::zero();
  if (transfer_running() && transfer_->sched)
    for (const auto& l : lanes_)
      if (l.sched) rtt = std::max(rtt, transfer_->sched->planning_rtt(*l.sched));
  return std::max(kGrowthWindow, rtt * 8);
}

double Sender::delivered_rate(Duration window, Time now) const {
  const auto& d = growth_.delivered;
  if (d.size() < 2 || d.back().first - d.front().first < window) return -1;
  // The last sample at or before now - window.
  auto from = d.front();
  for (const auto& x : d)
    if (x.first <= now - window) from = x;
  const double secs = (d.back().first - from.first).to_seconds();
  return secs > 0 ? static_cast<double>(d.back().second - from.second) / secs : -1;
}

void Sender::grow_streams(Time now) {
  growth_.next = Time::never();
  if (!transfer_running() || transfer_->phase != Transfer::Phase::sending || !transfer_->sched) return;
  growth_.next = now + Duration::millis(100);
  const Duration window = growth_window();
  growth_.delivered.emplace_back(now, sched().plan().delivered_bytes().count());
  while (growth_.delivered.size() > 2 && growth_.delivered[1].first < now - window * 3) growth_.delivered.pop_front();
  auto key = [](const PathSpec& p) { return p.local + "|" + p.remote; };
  if (growth_.trial) {
    Slot& s = slots_[*growth_.trial];
    const Lane* l = s.lane ? find(*s.lane) : nullptr;
    if (!l || l->state == LaneState::closed || s.removed) {  // the trial lane died: judge nothing
      growth_.settled.insert(key(s.path));
      growth_.trial.reset();
      return;
    }
    if (growth_.measure_from == Time::never()) {
      // From its first ack on, plus a little for its start-up to pass.
      if (l->sched && sched().stats(*l->sched).first_ack != Time::never())
        growth_.measure_from = now + std::max(Duration::millis(200), sched().planning_rtt(*l->sched) * 2);
      return;
    }
    if (now < growth_.measure_from + window) return;
    const double rate = delivered_rate(window, now);
    const double gain = growth_.base_rate > 0 ? rate / growth_.base_rate : 0;
    char detail[160];
    std::snprintf(detail, sizeof detail, "%s->%s: %.1f -> %.1f Mbit/s (x%.2f)", s.path.local.c_str(),
                  s.path.remote.c_str(), growth_.base_rate * 8 / 1e6, rate * 8 / 1e6, gain);
    growth_.trial.reset();
    if (gain >= kGrowthGain) {
      push(Note{"stream_kept", l->id, detail});
      return;
    }
    // It added nothing: the path is at its bottleneck, or shares one with
    // another path (folded: no more streams on it).
    growth_.settled.insert(key(s.path));
    push(Note{"stream_dropped", l->id, detail});
    s.removed = true;
    s.given_up = true;
    s.retry_at = Time::never();
    const LaneNo id = l->id;
    s.lane.reset();
    if (Lane* x = find(id)) lane_gone(*x, "a further stream on its path added nothing", true, now);
    return;
  }
  // A new trial: once the rate is steady (the last window within 5 % of the
  // one before: TCP's start-up is over), while the transfer has a few
  // windows left, on the next path that may still gain.
  if (cfg_.rate_limit) return;  // a cap, not the paths, sets the rate: nothing to learn
  const double base = delivered_rate(window, now);
  if (base <= 0 || growth_.delivered.back().first - growth_.delivered.front().first < window * 2) return;
  {
    // The window before the last one.
    auto at_or_before = [&](Time t) {
      auto x = growth_.delivered.front();
      for (const auto& d : growth_.delivered)
        if (d.first <= t) x = d;
      return x;
    };
    const auto a = at_or_before(now - window * 2), b = at_or_before(now - window);
    const double before = (b.first - a.first).to_seconds() > 0
                              ? static_cast<double>(b.second - a.second) / (b.first - a.first).to_seconds()
                              : -1;
    if (before <= 0 || std::abs(base - before) > 0.05 * before) return;
  }
  const double left = static_cast<double>((sched().plan().total() - sched().plan().delivered_bytes()).count());
  if (left / base < (window * 4).to_seconds()) return;
  size_t open = 0;
  for (const auto& l : lanes_) open += l.state != LaneState::closed;
  if (open + 1 > cfg_.max_lanes) return;
  // The paths (slots that are not extras), each once, round robin; not lane
  // 0's own (unbound) path: its interface's discovered path grows instead.
  std::vector<size_t> firsts;
  for (size_t i = 1; i < slots_.size(); ++i) {
    const Slot& x = slots_[i];
    if (x.extra || x.removed || x.path.kind != LaneKind::tcp || !x.lane || growth_.settled.count(key(x.path))) continue;
    const Lane* l = find(*x.lane);
    if (!l || l->state != LaneState::open || !l->data) continue;
    if (std::any_of(firsts.begin(), firsts.end(), [&](size_t j) { return key(slots_[j].path) == key(x.path); })) continue;
    size_t streams = 0;
    for (const auto& y : slots_)
      streams += !y.removed && y.lane && key(y.path) == key(x.path);
    if (streams < cfg_.max_streams) firsts.push_back(i);
  }
  if (firsts.empty()) return;
  const size_t pick = firsts[growth_.next_path++ % firsts.size()];
  Slot extra{slots_[pick].path, std::nullopt, false, 0, Time::never(), false, false, false, true};
  slots_.push_back(extra);
  growth_.trial = slots_.size() - 1;
  growth_.measure_from = Time::never();
  growth_.base_rate = base;
  char detail[120];
  std::snprintf(detail, sizeof detail, "%s->%s at %.1f Mbit/s", extra.path.local.c_str(), extra.path.remote.c_str(),
                base * 8 / 1e6);
  push(Note{"stream_trial", 0, detail});
  open_slot(slots_.size() - 1, now);
}

bool Sender::path_allowed(const Lane& l) const {
  if (!transfer_ || !transfer_->only_paths) return true;
  for (const auto& p : *transfer_->only_paths)
    if (p.kind == l.path.kind && p.local == l.path.local && p.remote == l.path.remote) return true;
  return false;
}

std::optional<core::LaneId> Sender::sched_id(LaneNo lane) const {
  const Lane* l = find(lane);
  return l ? l->sched : std::nullopt;
}

void Sender::drain_scheduler(Time now) {
  if (!transfer_ || transfer_->ended || !transfer_->sched || transfer_->phase != Transfer::Phase::sending) return;
  Transfer& t = *transfer_;
  while (auto action = t.sched->poll_action(now)) {
    if (auto* a = std::get_if<core::Assign>(&*action)) {
      Lane* l = find(t.sched_lanes[a->lane]);
      if (!l) continue;
      if (!l->traits.carries_messages) l->awaiting_hash[a->piece] = *a;
      push(SendPiece{l->id, t.id, *a});
    } else if (auto* c = std::get_if<core::Cancel>(&*action)) {
      Lane* l = find(t.sched_lanes[c->lane]);
      if (!l) continue;
      l->awaiting_hash.erase(c->piece);
      push(CancelPiece{l->id, t.id, c->piece});
    }
  }
  maybe_finish(now);
  if (t.ended || t.phase != Transfer::Phase::sending) return;
  split_rate(now);
  // Safety net: nothing in flight, nothing queued, no timer, bytes left.
  bool busy = t.sched->poll_timeout().has_value();
  for (size_t i = 0; i < t.sched->lane_count() && !busy; ++i)
    busy = t.sched->lane_alive(static_cast<core::LaneId>(i)) && t.sched->active_flights(static_cast<core::LaneId>(i)) > 0;
  bool opening = false;
  for (const auto& l : lanes_) opening = opening || l.state == LaneState::connecting || l.state == LaneState::joining;
  // Waiting for the receiver's next answer (its parts, protocol 9) is not stuck.
  if (busy || opening || t.awaiting_final) t.idle_since = Time::never();
  else if (t.idle_since == Time::never()) t.idle_since = now;
}

void Sender::maybe_finish(Time now) {
  Transfer& t = *transfer_;
  // Before the closing accept every piece so far may be in, with more to come.
  if (t.phase != Transfer::Phase::sending || t.awaiting_final) return;
  // Early, with the last pieces in flight — unless the receiver holds ranges
  // this run sends again: it counts them until those pieces arrive, and could
  // check the root over the stale ones. Then done waits for the last ack.
  if (!t.done_sent && (!t.held_resent || t.sched->complete()) && all_hashed()) send_done(now);
  if (t.ended || !t.sched->complete()) return;
  t.all_acked_at = now;
  if (!t.done_sent) {
    for (core::PieceId p = 0; p < t.sched->plan().piece_count(); ++p)
      if (t.sched->plan().piece(p).length.count() > 0 && (p >= t.hashes.size() || !t.hashes[p]))
        return end_transfer(make_outcome(TransferOutcome::End::stuck, "internal error: piece " + std::to_string(p) + " was acked but never hashed"));
  }
  t.phase = Transfer::Phase::verifying;
  // The result is owed from now on: its patience and the repeat of a done
  // whose lane died silently count from the last ack, not from the early done.
  for (auto& [r, m] : requests_)
    if (r.kind == Request::Kind::done) {
      r.deadline = now + cfg_.answer_timeout;
      if (r.sent_on != UINT32_MAX) {
        r.resend_after = resend_after(r.sent_on);
        r.resend_at = now + r.resend_after;
      }
    }
  push(Note{"verifying", 0, "every piece acked"});
}

void Sender::credit_in_flight(Time now) {
  if (!transfer_ || !transfer_->sched || transfer_->sched->complete()) return;
  // The verdict says every byte arrived; acks of the last pieces may still be
  // behind it (done no longer waits for them). Each piece not yet acked is
  // credited to the lane whose copy of it started first, so the lanes'
  // figures add up to the transfer.
  core::Scheduler& s = sched();
  std::map<core::PieceId, std::pair<core::LaneId, Time>> first;
  for (core::LaneId lane = 0; lane < s.lane_count(); ++lane)
    for (const auto& f : s.flights(lane)) {
      if (f.state == core::FlightState::cancelled || s.plan().piece(f.piece).state == core::PieceState::delivered) continue;
      const Time began = f.started != Time::never() ? f.started : f.assigned;
      auto [it, fresh] = first.try_emplace(f.piece, lane, began);
      if (!fresh && began < it->second.second) it->second = {lane, began};
    }
  for (const auto& [piece, at] : first) s.on_ack(at.first, piece, now);
}

bool Sender::all_hashed() const {
  const Transfer& t = *transfer_;
  for (core::PieceId p = 0; p < t.sched->plan().piece_count(); ++p)
    if (t.sched->plan().piece(p).length.count() > 0 && (p >= t.hashes.size() || !t.hashes[p])) return false;
  return true;
}

void Sender::send_done(Time now) {
  Transfer& t = *transfer_;
  std::vector<PieceRecord> records;
  for (core::PieceId p = 0; p < t.sched->plan().piece_count(); ++p) {
    const auto& piece = t.sched->plan().piece(p);
    if (piece.length.count() > 0) records.push_back({piece.offset.count(), piece.length.count(), *t.hashes[p]});
  }
  t.done_sent = true;
  wire::Done done;
  done.transfer_id = t.id;
  done.root = cfg_.root_hash ? cfg_.root_hash(t.offer.hash, std::move(records)) : wire::Digest{};
  // After every UDP header sent so far, on the same lane. Headers of pieces
  // sent again may follow it: the receiver holds done until every byte is in.
  // Sent again if unanswered, as any request (its lane may die silently with
  // the verdict, and the last acks with it: the receiver acks no piece once
  // it has its verdict); the answer's patience counts from the last ack
  // (maybe_finish).
  Request r;
  r.kind = Request::Kind::done;
  std::optional<LaneNo> lane = t.ordered_lane;
  if (!lane || !find(*lane) || find(*lane)->state != LaneState::open) lane = control_lane();
  r.sent_on = lane ? *lane : UINT32_MAX;
  if (lane) {
    push_request_message(*lane, done);
    r.resend_after = resend_after(*lane);
    r.resend_at = now + r.resend_after;
  }
  requests_.emplace_back(r, done);
  push(Note{"done_sent", lane.value_or(0), t.last ? "every piece hashed; done and the goodbye sent" : "every piece hashed; done sent"});
}

void Sender::send_ordered(const ToReceiver& msg, Time) {
  Transfer& t = *transfer_;
  const Lane* cur = t.ordered_lane ? find(*t.ordered_lane) : nullptr;
  if (!cur || cur->state != LaneState::open) {
    t.ordered_lane = control_lane();
    if (!t.ordered_lane) return;
    if (cur && !t.udp_headers.empty()) {  // the old lane may have lost some
      for (const auto& h : t.udp_headers) push(SendMessage{*t.ordered_lane, h});
      push(Note{"ordered_lane", *t.ordered_lane, "headers sent again", t.udp_headers.size()});
    }
  }
  push(SendMessage{*t.ordered_lane, msg});
}

void Sender::end_transfer(TransferOutcome outcome) {
  if (!transfer_ || transfer_->ended) return;
  Transfer& t = *transfer_;
  t.ended = true;
  t.in_place = nullptr;  // the caller's entries may go now
  std::erase_if(requests_, [](const auto& r) { return r.first.kind != Request::Kind::udp_open; });
  for (auto& l : lanes_) {
    l.sched.reset();
    l.awaiting_hash.clear();
  }
  push(TransferEnded{t.id, std::move(outcome)});
}

Duration Sender::lane_grace() const {
  bool open = false;
  for (const auto& l : lanes_) open = open || l.state == LaneState::open;
  return open ? std::max(cfg_.no_lane_grace, cfg_.message_lane_grace) : cfg_.no_lane_grace;
}

void Sender::check_lanes_left(Time now) {
  if (!transfer_running()) return;
  if (message_lane_open()) {
    transfer_->no_lane_since = Time::never();
    return;
  }
  bool retry = false;
  for (const auto& s : slots_) retry = retry || (!s.given_up && s.retry_at != Time::never());
  if (lane_grace().ns() > 0 && retry) {
    if (transfer_->no_lane_since == Time::never()) transfer_->no_lane_since = now;
    return;
  }
  end_transfer(make_outcome(TransferOutcome::End::lanes_lost, "every lane to the receiver failed"));
}

// ---- lane events ------------------------------------------------------------------

void Sender::handle_piece_started(LaneNo lane, core::PieceId piece, Time now) {
  if (!transfer_running() || !transfer_->sched) return;
  if (auto sid = sched_id(lane)) {
    sched().on_send_started(*sid, piece, now);
    drain_scheduler(now);
  }
}

void Sender::handle_piece_hashed(LaneNo lane, core::PieceId piece, const wire::Digest& hash, Time now) {
  if (!transfer_running() || !transfer_->sched) return;
  Transfer& t = *transfer_;
  if (piece >= t.hashes.size()) t.hashes.resize(piece + 1);
  t.hashes[piece] = hash;
  Lane* l = find(lane);
  if (l && !l->traits.carries_messages) {
    const auto it = l->awaiting_hash.find(piece);
    if (it == l->awaiting_hash.end()) return;  // cancelled meanwhile, or the lane died
    const core::Assign a = it->second;
    l->awaiting_hash.erase(it);
    wire::UdpPiece h{lane, t.id, a.piece, a.chunk, a.offset.count(), a.length.count(), hash};
    t.udp_headers.push_back(h);
    send_ordered(h, now);
    push(ReleasePiece{lane, t.id, piece});
  }
  maybe_finish(now);  // the last hash: done goes now, behind that piece
}

void Sender::handle_piece_written(LaneNo lane, core::PieceId piece, Time now) {
  if (!transfer_running() || !transfer_->sched) return;
  if (auto sid = sched_id(lane)) {
    sched().on_written(*sid, piece, now);
    drain_scheduler(now);
  }
}

void Sender::handle_piece_delivered(LaneNo lane, core::PieceId piece, Time now) {
  if (Lane* x = find(lane)) x->last_heard = now;
  if (!transfer_running() || !transfer_->sched) return;
  const Lane* l = find(lane);
  if (!l || !l->sched || piece >= sched().plan().piece_count()) return;
  sched().on_ack(*l->sched, piece, now);
  drain_scheduler(now);
}

// ---- silent lanes ------------------------------------------------------------------

Duration Sender::silence_limit(const Lane& l) const {
  Duration rtt = Duration::zero();
  if (transfer_ && transfer_->sched && l.sched) {
    const auto& e = transfer_->sched->estimator(*l.sched);
    if (e.measured()) rtt = e.srtt();
  }
  return std::max(cfg_.silent_after, rtt * 4.0);
}

void Sender::handle_transport_progress(LaneNo id, Time now) {
  Lane* l = find(id);
  if (!l || l->state != LaneState::open) return;
  l->progress_at = now;
  l->last_heard = now;
  if (!l->scout) return;
  // It came back before the fresh connection joined: that one goes.
  const LaneNo scout = *l->scout;
  l->scout.reset();
  if (Lane* sc = find(scout); sc && sc->state != LaneState::closed) {
    sc->replaces.reset();
    lane_gone(*sc, "the lane it was to replace came back", true, now);
  }
}

void Sender::watch_silence(Time now) {
  // Only while pieces move: between transfers nothing is owed, and the
  // engine may not be reporting.
  if (cfg_.silent_after.ns() <= 0 || closing_ || !transfer_running() || transfer_->phase != Transfer::Phase::sending)
    return;
  for (size_t i = 0; i < lanes_.size(); ++i) {
    const Lane& l = lanes_[i];
    if (l.state != LaneState::open || l.progress_at == Time::never() || l.scout || l.replaces ||
        l.traits.kind != LaneKind::tcp)
      continue;
    const Duration silent = now - l.progress_at;
    if (silent < silence_limit(l) || (l.next_scout != Time::never() && now < l.next_scout)) continue;
    Lane scout;
    scout.id = next_lane_++;
    scout.path = l.path;
    scout.traits = default_traits(l.path.kind);
    scout.state = LaneState::connecting;
    scout.deadline = now + std::max(kScoutEvery, silence_limit(l) * 0.75);  // 3 RTTs on a long path
    scout.data = l.data;
    scout.replaces = l.id;
    const LaneNo sid = scout.id, lid = l.id;
    const PathSpec path = l.path;
    lanes_.push_back(std::move(scout));  // `l` is not used past here
    Lane& old = *find(lid);
    old.scout = sid;
    old.next_scout = now + kScoutEvery;
    push(Note{"lane_silent", lid,
              "no progress for " + std::to_string(silent.ns() / 1'000'000) + " ms: a fresh connection tries its path"});
    push(OpenLane{sid, path, {}});
  }
}

void Sender::scout_joined(Lane& scout, Time now) {
  const LaneNo sid = scout.id;
  const LaneNo oid = *scout.replaces;
  scout.replaces.reset();
  Lane* old = find(oid);
  if (old) old->scout.reset();
  const bool back = old && old->state == LaneState::open && now - old->progress_at < silence_limit(*old);
  const size_t si = old ? old->slot : SIZE_MAX;
  const bool slot_free = si != SIZE_MAX && !slots_[si].removed &&
                         (!slots_[si].lane || (old && old->state == LaneState::open && slots_[si].lane == oid));
  if (back || !slot_free) {
    if (Lane* sc = find(sid)) lane_gone(*sc, back ? "the lane it was to replace came back" : "its path is gone", true, now);
    return;
  }
  // The fresh connection takes the silent lane's place (its slot, so the
  // path keeps its count); the silent one closes, the receiver told why.
  if (old->state == LaneState::open) {
    const Duration silent = now - old->progress_at;
    old->slot = SIZE_MAX;
    lane_gone(*old, "silent for " + std::to_string(silent.ns() / 1'000'000) +
                        " ms: a fresh connection on its path took its place", true, now);
  }
  Lane* sc = find(sid);
  sc->slot = si;
  slots_[si].lane = sid;
  slots_[si].worked = true;
  slots_[si].failures = 0;
  slots_[si].retry_at = Time::never();
  push(Note{"lane_replaced", sid, "took the place of lane " + std::to_string(oid)});
}

void Sender::handle_transport_rate(LaneNo lane, Rate rate, Time now) {
  if (!transfer_running() || !transfer_->sched) return;
  if (auto sid = sched_id(lane)) sched().on_transport_rate(*sid, rate, now);
}

void Sender::handle_read_failed(const std::string& reason, Time) {
  end_transfer(make_outcome(TransferOutcome::End::read_failed, reason));
}

void Sender::handle_timeout(Time now) {
  watch_silence(now);
  if (now >= next_split_) split_rate(now);
  if (now >= growth_.next) grow_streams(now);
  for (size_t i = 0; i < lanes_.size(); ++i) {
    Lane& l = lanes_[i];
    if (l.state == LaneState::closed || l.deadline > now) continue;
    lane_gone(l, l.state == LaneState::joining ? "no welcome from the receiver in time" : "could not connect in time",
              false, now);
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (closing_ || s.given_up || s.lane || s.retry_at > now) continue;
    push(Note{"path_reopen", 0, s.path.local + "->" + s.path.remote});
    open_slot(i, now);
  }
  for (auto& [r, m] : requests_) {
    if (r.resend_at > now || r.sent_on == UINT32_MAX) continue;
    // A streamed offer is not answered before its last part: its clock
    // starts when that goes (a lane that dies meanwhile resends it at once).
    if (r.kind == Request::Kind::offer && transfer_ && transfer_->streaming) continue;
    // Unanswered: the lane may be dead without a word. Again, on another
    // message lane if there is one (the receiver answers a repeat as before).
    const auto other = control_lane_except(r.sent_on);
    r.resend_after = r.resend_after * 2.0;
    r.resend_at = now + r.resend_after;
    if (!other) continue;
    push_request_message(*other, m);
    push(Note{"request_resent", *other, "no answer on lane " + std::to_string(r.sent_on) + " in time"});
    r.sent_on = *other;
  }
  std::vector<LaneNo> unanswered_udp;
  bool request_timed_out = false;
  Request::Kind timed_out_kind = Request::Kind::offer;
  for (const auto& [r, m] : requests_) {
    if (r.deadline > now) continue;
    // A streamed offer whose every part sent was accepted owes no answer
    // yet: the walk holds the next part (its window is full, or its disk slow).
    if (r.kind == Request::Kind::offer && transfer_ && transfer_->streaming && offer_answered_so_far()) continue;
    if (r.kind == Request::Kind::udp_open) {
      unanswered_udp.push_back(r.udp_lane);
    } else {
      request_timed_out = true;
      timed_out_kind = r.kind;
    }
  }
  for (LaneNo id : unanswered_udp)
    if (Lane* l = find(id); l && l->state != LaneState::closed)
      lane_gone(*l, "the receiver did not answer udp_open", false, now);
  if (request_timed_out)
    end_transfer(make_outcome(TransferOutcome::End::timed_out, timed_out_kind == Request::Kind::offer ? "the receiver did not answer the offer in time"
                                                         : "the receiver did not confirm the transfer in time"));
  if (transfer_running() && transfer_->sched && transfer_->phase == Transfer::Phase::sending) {
    sched().on_timeout(now);
    drain_scheduler(now);
  }
  if (transfer_running()) {
    Transfer& t = *transfer_;
    if (t.idle_since != Time::never() && now - t.idle_since >= cfg_.stuck_after)
      end_transfer(make_outcome(TransferOutcome::End::stuck, "internal error: the scheduler stopped handing out work with " +
                        std::to_string((sched().plan().total() - sched().plan().delivered_bytes()).count()) +
                        " bytes left; the temporary files are kept"));
    else if (t.no_lane_since != Time::never() && now - t.no_lane_since >= lane_grace())
      end_transfer(make_outcome(TransferOutcome::End::lanes_lost, "every lane to the receiver failed and none came back in time"));
  }
}

std::optional<SenderAction> Sender::poll_action() {
  if (actions_.empty()) return std::nullopt;
  SenderAction a = std::move(actions_.front());
  actions_.pop_front();
  return a;
}

std::optional<Time> Sender::poll_timeout() const {
  std::optional<Time> t;
  auto take = [&](Time x) {
    if (x != Time::never() && (!t || x < *t)) t = x;
  };
  for (const auto& l : lanes_)
    if (l.state != LaneState::closed) take(l.deadline);
  if (!closing_)
    for (const auto& s : slots_)
      if (!s.given_up && !s.lane) take(s.retry_at);
  for (const auto& [r, m] : requests_) {
    // A streamed offer is sent again only when its lane dies, and its
    // answer clock stands while every part sent is accepted (handle_timeout).
    const bool streamed_offer = r.kind == Request::Kind::offer && transfer_ && transfer_->streaming;
    if (!streamed_offer || !offer_answered_so_far()) take(r.deadline);
    if (!streamed_offer && r.sent_on != UINT32_MAX) take(r.resend_at);  // no lane: sent when one opens
  }
  if (transfer_running()) {
    const Transfer& tr = *transfer_;
    take(next_split_);
    if (cfg_.max_streams > 0) take(growth_.next);
    if (tr.sched && tr.phase == Transfer::Phase::sending)
      if (auto x = tr.sched->poll_timeout()) take(*x);
    if (tr.idle_since != Time::never()) take(tr.idle_since + cfg_.stuck_after);
    if (tr.no_lane_since != Time::never()) take(tr.no_lane_since + lane_grace());
  }
  if (cfg_.silent_after.ns() > 0 && !closing_ && transfer_running() && transfer_->phase == Transfer::Phase::sending)
    for (const auto& l : lanes_)
      if (l.state == LaneState::open && l.progress_at != Time::never() && !l.scout && !l.replaces &&
          l.traits.kind == LaneKind::tcp)
        take(std::max(l.progress_at + silence_limit(l), l.next_scout == Time::never() ? Time::zero() : l.next_scout));
  return t;
}

}  // namespace braid::session

namespace braid::session {

const std::vector<wire::FileDecision>& Sender::sync_files() const {
  static const std::vector<wire::FileDecision> none;
  return transfer_ ? transfer_->files : none;
}

const std::vector<wire::HeldRange>& Sender::reused_ranges() const {
  static const std::vector<wire::HeldRange> none;
  return transfer_ ? transfer_->reused : none;
}

}  // namespace braid::session
