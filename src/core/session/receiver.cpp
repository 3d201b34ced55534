#include "core/session/receiver.hpp"

#include <algorithm>
#include <utility>

#include "core/session/sync.hpp"
#include "core/wire/protocol_needs.hpp"

namespace braid::session {

namespace {

// True if the records, sorted by offset, tile [0, total) exactly.
bool tiles(std::vector<PieceRecord> records, uint64_t total) {
  std::sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
  uint64_t at = 0;
  for (const auto& r : records) {
    if (r.offset != at) return false;
    at += r.length;
  }
  return at == total;
}

}  // namespace

Receiver::Receiver(ReceiverConfig cfg) : cfg_(std::move(cfg)) {}

Receiver::Lane* Receiver::find(LaneNo id) {
  for (auto& l : lanes_)
    if (l.id == id) return &l;
  return nullptr;
}

void Receiver::start(const LaneTraits& lane0, Time) {
  lanes_.push_back(Lane{0, lane0, true, true, {}});
  push(RecvSendMessage{0, wire::Addresses{cfg_.advertised, cfg_.protocol}});
}

size_t Receiver::counted_lanes() const {
  size_t n = 0;
  for (const auto& l : lanes_) n += l.open && l.joined;
  return n;
}

std::string Receiver::lane_limit() const {
  if (counted_lanes() < cfg_.max_lanes) return {};
  return "the receiver takes at most " + std::to_string(cfg_.max_lanes) + " lanes per session";
}

size_t Receiver::open_lanes() const {
  size_t n = 0;
  for (const auto& l : lanes_) n += l.open;
  return n;
}

bool Receiver::handle_lane_connected(LaneNo id, const LaneTraits& traits, Time) {
  if (ended_) return false;
  if (find(id)) return false;  // a lane id joins once: a replayed join is refused
  size_t joining = 0;
  for (const auto& l : lanes_) joining += l.open && !l.joined;
  if (joining >= cfg_.max_joining) return false;
  lanes_.push_back(Lane{id, traits, false, true, {}});
  return true;
}

std::optional<LaneNo> Receiver::reply_lane(LaneNo preferred) const {
  std::optional<LaneNo> any;
  for (const auto& l : lanes_) {
    if (!l.open || !l.joined || !l.traits.carries_messages) continue;
    if (l.id == preferred) return l.id;
    if (!any) any = l.id;
  }
  return any;
}

void Receiver::advertise(std::vector<std::string> addresses, Time) {
  if (ended_ || addresses == cfg_.advertised) return;
  cfg_.advertised = std::move(addresses);
  // On every lane that carries messages: the one lane 0 would pick may be
  // on the very address that just went away (the sender ignores repeats).
  for (const auto& l : lanes_)
    if (l.open && l.joined && l.traits.carries_messages) push(RecvSendMessage{l.id, wire::Addresses{cfg_.advertised, cfg_.protocol}});
}

void Receiver::reply(LaneNo preferred, ToSender msg) {
  if (auto lane = reply_lane(preferred)) push(RecvSendMessage{*lane, std::move(msg)});
}

void Receiver::close_lane(Lane& l, const std::string& reason, bool announce, Time now) {
  if (!l.open) return;
  l.open = false;
  l.close_reason = reason;
  const LaneNo id = l.id;
  const bool joined = l.joined;
  push(RecvCloseLane{id, reason});
  if (ended_) return;  // the end of a session closes every lane: not news
  push(RecvNote{"lane_closed", id, reason});
  if (announce && joined) reply(UINT32_MAX, wire::LaneClosed{id, reason});
  bool message_lane = false, any = false;
  for (const auto& x : lanes_) {
    message_lane = message_lane || (x.open && x.traits.carries_messages);
    any = any || x.open;
  }
  if (message_lane) return;
  if (!any || cfg_.message_lane_grace.ns() <= 0) return end_session("every lane closed");
  // UDP lanes still bring data: the sender opens a lane for messages again.
  if (no_message_lane_since_ == Time::never()) no_message_lane_since_ = now;
}

void Receiver::handle_lane_failed(LaneNo id, const std::string& reason, Time now) {
  if (Lane* l = find(id)) close_lane(*l, reason, true, now);
}

void Receiver::refuse_join(Lane& lane, const std::string& why, bool tell) {
  push(RecvNote{"lane_refused", lane.id, why});
  // Told on the lane itself (a lane that said a join): the sender waits there for its welcome.
  if (tell) push(RecvSendMessage{lane.id, wire::LaneClosed{lane.id, why}});
  lane.open = false;
  lane.close_reason = why;
  push(RecvCloseLane{lane.id, why});
}

void Receiver::handle_message(LaneNo on, const ToReceiver& msg, Time now) {
  ToReceiver copy = msg;
  handle_message(on, std::move(copy), now);
}

void Receiver::handle_message(LaneNo on, ToReceiver&& msg, Time now) {
  if (ended_) return;
  Lane* lane = find(on);
  if (!lane || !lane->open) return;
  if (!lane->joined) {
    // The first frame of a lane must be its join.
    const auto* join = std::get_if<wire::LaneJoin>(&msg);
    // A sender of protocol 7 speaks a part of ours (it never sends what 8
    // added): its lanes join too. Older ones are told by their offer.
    const uint32_t oldest = wire::kLastSilentProtocol, newest = std::max(cfg_.protocol, oldest);
    if (!join || join->lane_id != on || join->version < oldest || join->version > newest) {
      const std::string why = !join || join->lane_id != on
                                  ? std::string("join refused: no valid lane_join")
                                  : "join refused: the lane says braid protocol " + std::to_string(join->version) +
                                        " and this receiver speaks " + std::to_string(oldest) + " to " +
                                        std::to_string(newest);
      return refuse_join(*lane, why, join != nullptr);
    }
    if (const std::string over = lane_limit(); !over.empty()) {
      refuse_join(*lane, over, true);
      return;
    }
    lane->joined = true;
    if (lane->traits.carries_messages) no_message_lane_since_ = Time::never();
    push(RecvSendMessage{on, wire::LaneWelcome{on}});
    push(RecvNote{"lane_open", on, lane_kind_name(lane->traits.kind)});
    return;
  }
  std::visit(
      [&](auto& m) {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, wire::Offer>) {
          if (m.version != wire::kProtocolVersion) {
            // A sender of another protocol (protocol 3 has no sync options):
            // told in a refusal its version understands, not left waiting.
            push(RecvNote{"offer_refused", on, "protocol " + std::to_string(m.version)});
            return reply(on, wire::Refuse{m.transfer_id, wire::RefuseReason::bad_offer,
                                          "this receiver speaks braid protocol " +
                                              std::to_string(wire::kProtocolVersion) + ", the sender " +
                                              std::to_string(m.version) + ": run the same braid version on both ends"});
          }
          auto it = transfers_.find(m.transfer_id);
          if (it != transfers_.end()) {
            // Sent again (its lane died before our answer): the same answer.
            // Still being put together: its parts follow again, and those
            // we have are ignored; what was accepted of it is said again
            // (that answer may have died with the lane).
            if (it->second.answer)
              send_answer(on, *it->second.answer);
            else if (it->second.view.early_entries > 0)
              reply(on, wire::AcceptPart{m.transfer_id, it->second.view.early_entries});
            return;
          }
          // The offer is taken, entries and all (read from t.offer from here on).
          Transfer t;
          t.offer = std::make_shared<wire::Offer>(std::move(m));
          const wire::Offer& o = *t.offer;
          t.asked_on = on;
          t.view.id = o.transfer_id;
          t.view.total = o.total_bytes();
          t.assembling = o.continued;
          auto& placed = transfers_.emplace(o.transfer_id, std::move(t)).first->second;
          if (placed.assembling) {
            push(RecvNote{"offer_part", on, std::to_string(o.entries.size()) + " entries"});
            // Answered part by part when the sender asks and the engine
            // can (a sync's verdicts and a dry run's list need the whole).
            placed.early = o.early_answers && cfg_.early_answers && !o.discard && o.sync == wire::SyncOptions{};
            if (placed.early) {
              // Its entries are kept as the parts they come in, shared with
              // the engine (one copy: wire/entry_parts.hpp); the offer holds its fields.
              placed.entries.append(std::make_shared<const std::vector<wire::ManifestEntry>>(std::move(placed.offer->entries)));
              placed.offer->entries.clear();
              ask_part(placed);
            }
            return;
          }
          push(PrepareOffer{placed.offer});
        } else if constexpr (std::is_same_v<M, wire::OfferPart>) {
          auto it = transfers_.find(m.transfer_id);
          if (it == transfers_.end() || !it->second.assembling) return;  // no head, or complete (a part sent again)
          Transfer& t = it->second;
          bool complete = false;
          // The part's entries are moved in, not copied (m's transfer_id stays).
          const std::string bad = t.early ? wire::append_offer_part(*t.offer, t.entries, std::move(m), complete)
                                          : wire::append_offer_part(*t.offer, std::move(m), complete);
          if (!bad.empty()) {
            t.assembling = false;
            push(RecvNote{"offer_refused", on, bad});
            wire::Refuse no{m.transfer_id, wire::RefuseReason::bad_offer, "a malformed offer: " + bad};
            t.answer = no;
            if (t.view.early_entries > 0) abandon_early(t, no.message, false);
            return reply(on, no);
          }
          if (complete) {
            t.assembling = false;
            t.view.total = t.early ? t.entries.total_bytes() : t.offer->total_bytes();
            push(RecvNote{"offer_complete", on, std::to_string(entry_count(t)) + " entries"});
          }
          if (t.early) return ask_part(t);  // the engine hears of these entries once it answered the last
          if (complete) push(PrepareOffer{t.offer});
        } else if constexpr (std::is_same_v<M, wire::Done>) {
          auto it = transfers_.find(m.transfer_id);
          if (it == transfers_.end() || !accepted(m.transfer_id)) return;
          Transfer& t = it->second;
          if (t.result) return reply(on, *t.result);  // sent again: the same verdict
          if (t.done) return;                        // already being checked
          t.done = m;
          t.done_on = on;
          t.view.done_at = now;
          t.view.root = m.root;
          t.done_deadline = now + cfg_.done_wait;
          try_finish(t, now);
        } else if constexpr (std::is_same_v<M, wire::Cancel>) {
          // The sender stopped it: abandoned as if the session had ended
          // (what is verified stays for a later run); no verdict is owed.
          auto it = transfers_.find(m.transfer_id);
          if (it == transfers_.end()) return;
          Transfer& t = it->second;
          if (!t.answer) {
            t.cancelled = true;  // still being prepared: abandoned once it is
            // Parts accepted already: their pieces stop, what they made stays.
            if (t.view.early_entries > 0 && !t.failed) abandon_early(t, "cancelled by the sender: " + m.reason, true);
            return;
          }
          if (!accepted(m.transfer_id) || t.result || t.failed || t.finalizing) return;
          t.failed = true;
          t.view.cancelled = true;
          push(RecvNote{"transfer_cancelled", on, m.reason});
          push(AbandonTransfer{m.transfer_id, "cancelled by the sender: " + m.reason, std::nullopt, true});
        } else if constexpr (std::is_same_v<M, wire::LaneClosed>) {
          if (Lane* other = find(m.lane_id)) close_lane(*other, "closed by the sender: " + m.reason, false, now);
        } else if constexpr (std::is_same_v<M, wire::Bye>) {
          if (!m.after_transfer) return end_session("the sender said bye");
          bye_after_ = *m.after_transfer;
          const auto it = transfers_.find(*m.after_transfer);
          // Its verdict went already (the bye came a moment behind its done):
          // again on every lane, each ahead of that lane's close — the lane it
          // went on may be dying. It can have none (cancelled, unknown): the end.
          if (it != transfers_.end() && it->second.result) return send_result(it->second);
          if (it == transfers_.end() || it->second.failed) end_session("the sender said bye with its done", true);
        } else if constexpr (std::is_same_v<M, wire::ErrorMessage>) {
          end_session("the sender ended the session: " + m.message);
        } else if constexpr (std::is_same_v<M, wire::UdpOpen>) {
          std::string why;
          if (find(m.lane_id)) why = "lane id in use";
          else why = lane_limit();
          if (!why.empty()) {
            push(RecvNote{"lane_refused", m.lane_id, why});
            return push(RecvSendMessage{on, wire::UdpReady{m.lane_id, "", why}});
          }
          lanes_.push_back(Lane{m.lane_id, LaneTraits::udp(), true, true, {}});
          udp_asked_on_[m.lane_id] = on;
          push(OpenUdpLane{m.lane_id, m.address, on});
        } else if constexpr (std::is_same_v<M, wire::UdpPiece>) {
          auto it = transfers_.find(m.transfer_id);
          if (it == transfers_.end() || !taking_pieces(m.transfer_id) || m.hash.size == 0) return;
          Transfer& t = it->second;
          if (t.result || t.failed || t.pieces.count(m.piece)) return;  // verified already (sent again)
          const uint64_t limit = accepted(m.transfer_id) ? t.view.total : t.early_bytes;
          if (m.piece_offset + m.piece_length > limit || m.piece_offset + m.piece_length < m.piece_offset)
            return;
          const Lane* u = find(m.lane_id);
          if (!u || !u->open) return;
          push(ExpectPiece{m});
        } else if constexpr (std::is_same_v<M, wire::LaneJoin>) {
          // A second join on a joined lane: nothing to do.
        }
      },
      msg);
}

bool Receiver::accepted(uint32_t id) const {
  auto it = transfers_.find(id);
  return it != transfers_.end() && it->second.answer && std::holds_alternative<wire::Accept>(*it->second.answer);
}

bool Receiver::taking_pieces(uint32_t id) const {
  auto it = transfers_.find(id);
  if (it == transfers_.end()) return false;
  const Transfer& t = it->second;
  return accepted(id) || (!t.answer && t.early && t.view.early_entries > 0 && !t.failed);
}

void Receiver::ask_part(Transfer& t) {
  if (t.part_out || t.answer || t.failed || ended_) return;
  const size_t have = t.entries.size();
  if (t.part_end == have && t.assembling) return;  // nothing new yet
  PrepareOfferPart p;
  p.transfer = t.offer->transfer_id;
  p.first = t.part_end;
  const auto& parts = t.entries.parts();
  p.parts.assign(parts.begin() + static_cast<ptrdiff_t>(t.parts_out), parts.end());
  if (t.part_end == 0) p.head = *t.offer;  // its fields: the entries are in the parts
  if (!t.assembling) p.whole = t.offer;
  t.parts_out = parts.size();
  t.whole_out = !t.assembling;
  t.part_out = true;
  t.part_end = have;
  push(std::move(p));
}

void Receiver::abandon_early(Transfer& t, const std::string& reason, bool cancelled) {
  t.failed = true;
  t.view.cancelled = cancelled;
  push(AbandonTransfer{t.offer->transfer_id, reason, std::nullopt, cancelled});
}

void Receiver::handle_part_prepared(uint32_t id, Time now) {
  auto it = transfers_.find(id);
  if (it == transfers_.end() || !it->second.early || !it->second.part_out || it->second.whole_out) return;
  Transfer& t = it->second;
  t.part_out = false;
  const bool first = t.view.early_entries == 0;
  if (t.answer) return;  // refused meanwhile (a malformed later part)
  if (t.cancelled || ended_) {
    // What the engine made for this part stays for a later run.
    if (!t.failed) {
      if (!t.cancelled) ++failures_;
      abandon_early(t, t.cancelled ? "cancelled by the sender" : end_reason_, t.cancelled);
    }
    return;
  }
  accept_entries(t, t.view.early_entries, t.part_end, false);
  t.view.early_entries = static_cast<uint32_t>(t.part_end);
  if (first) t.view.accepted_at = now;
  push(RecvNote{"offer_part_accepted", t.asked_on, std::to_string(t.part_end) + " entries"});
  reply(t.asked_on, wire::AcceptPart{id, t.view.early_entries});
  ask_part(t);  // the parts that came meanwhile
}

void Receiver::handle_part_declined(uint32_t id, Time now) {
  auto it = transfers_.find(id);
  if (it == transfers_.end() || !it->second.early || !it->second.part_out) return;
  Transfer& t = it->second;
  if (t.entries.released() > 0) {
    // Parts accepted already were let go (the engine declines only the
    // first): what came can no longer be answered whole.
    t.part_out = false;
    return handle_offer_prepared(
        id, wire::Refuse{id, wire::RefuseReason::bad_offer, "internal error: a part declined after parts were accepted"}, now);
  }
  t.early = false;
  t.part_out = false;
  // As protocol 8, the offer's entries are put together in it (a copy of
  // what came so far, once: the engine made nothing of them).
  t.offer->entries.assign(t.entries.begin(), t.entries.end());
  t.entries = wire::EntryParts{};
  t.parts_out = 0;
  if (t.answer || t.failed) return;
  // As protocol 8: the whole offer is prepared once its last part is in.
  if (!t.assembling) push(PrepareOffer{t.offer});
}

bool Receiver::lane_joined(LaneNo id) const {
  for (const auto& l : lanes_)
    if (l.id == id) return l.open && l.joined;
  return false;
}

void Receiver::accept_entries(Transfer& t, size_t from, size_t to, bool last) {
  if (!t.holes) t.holes.emplace(t.offer->chunk_size);
  const size_t had = t.hole_records.size();
  const auto& parts = t.entries.parts();
  for (size_t k = from < to ? t.entries.part_of(from) : parts.size(); k < parts.size() && from < to; ++k) {
    const size_t first = t.entries.first_of(k);
    const size_t b = std::min(to, first + parts[k]->size()) - first;
    t.holes->add(std::span<const wire::ManifestEntry>(*parts[k]).subspan(from - first, b - (from - first)), t.hole_records);
    from = first + b;
  }
  if (last) t.holes->finish(t.hole_records);
  t.early_bytes = t.holes->end();
  for (size_t k = had; k < t.hole_records.size(); ++k) add_verified(t, t.hole_records[k].offset, t.hole_records[k].length);
  // The engine holds the accepted entries now (each part went to it before
  // its answer came): in path order, where no later part links to one of
  // them (check_offer_part), the machine needs no more than their counts.
  if (t.offer->ordered) t.entries.release_before(to);
}

void Receiver::add_verified(Transfer& t, uint64_t offset, uint64_t length) {
  if (length == 0 || offset + length <= t.verified_to) return;
  // Ranges beyond the prefix stay merged: one for each gap, not each piece.
  auto at = t.verified_ahead.upper_bound(offset);
  if (at != t.verified_ahead.begin() && std::prev(at)->second >= offset) {
    at = std::prev(at);
    at->second = std::max(at->second, offset + length);
  } else {
    at = t.verified_ahead.emplace_hint(at, offset, offset + length);
  }
  for (auto next = std::next(at); next != t.verified_ahead.end() && next->first <= at->second;
       next = t.verified_ahead.erase(next))
    at->second = std::max(at->second, next->second);
  for (auto it = t.verified_ahead.begin(); it != t.verified_ahead.end() && it->first <= t.verified_to;
       it = t.verified_ahead.erase(it))
    t.verified_to = std::max(t.verified_to, it->second);
}

uint64_t Receiver::verified_prefix(uint32_t id) const {
  auto it = transfers_.find(id);
  return it == transfers_.end() ? 0 : it->second.verified_to;
}

bool Receiver::piece_verified(uint32_t id, uint32_t piece) const {
  auto it = transfers_.find(id);
  return it != transfers_.end() && it->second.pieces.count(piece);
}

std::optional<Receiver::TransferView> Receiver::transfer(uint32_t id) const {
  auto it = transfers_.find(id);
  if (it == transfers_.end()) return std::nullopt;
  return it->second.view;
}

void Receiver::handle_offer_prepared(uint32_t id, std::variant<wire::Accept, wire::Refuse> answer, Time now) {
  auto it = transfers_.find(id);
  if (it == transfers_.end() || it->second.answer) return;
  Transfer& t = it->second;
  // Answered part by part: a refusal may come at any part (the disk is
  // full), the accept only as the answer to the last.
  if (t.early && std::holds_alternative<wire::Accept>(answer) && !(t.part_out && t.whole_out)) return;
  t.part_out = false;
  if (t.early && t.failed) return;  // abandoned already (cancelled, the session ended)
  // The engine refuses such an offer itself (it knows the wire's limit
  // too); past it, the transfer it prepared is abandoned here.
  if (auto* a = std::get_if<wire::Accept>(&answer); a && a->files.size() > verdicts_per_accept() && !t.offer->verdicts_apart) {
    const std::string why = wire::too_many_verdicts(a->files.size(), verdicts_per_accept());
    answer = wire::Refuse{id, wire::RefuseReason::bad_offer, why};
    t.failed = true;
    push(AbandonTransfer{id, why, std::nullopt});
  }
  if (auto* a = std::get_if<wire::Accept>(&answer)) {
    a->transfer_id = id;
    t.held = a->held;
    for (const auto& h : t.held) t.view.held_bytes += h.length;
    // Files kept as they are: delivered without a byte sent or a hash, the
    // same records the sender makes of them (sync.hpp). Answered part by
    // part: the holes of sparse files, which the sender took out of its
    // plan as it grew (no verdicts: nothing is kept whole).
    if (t.early) accept_entries(t, t.view.early_entries, t.entries.size(), true);
    for (const auto& k : t.early ? std::exchange(t.hole_records, {}) : sync::kept_records(*t.offer, a->files)) {
      t.held.push_back(k);
      t.view.kept_bytes += k.length;
    }
    if (t.view.accepted_at == Time::never()) t.view.accepted_at = now;
    t.view.early_entries = t.early ? static_cast<uint32_t>(t.entries.size()) : 0;
    if (t.offer->sync.dry_run) {
      // Nothing follows a dry run's answer: the transfer is over here.
      t.result = wire::TransferResult{id, wire::ResultStatus::verified, "dry run"};
      t.view.finished = true;
    }
  } else {
    std::get<wire::Refuse>(answer).transfer_id = id;
  }
  t.answer = answer;
  if (t.cancelled && std::holds_alternative<wire::Accept>(answer)) {
    t.failed = true;
    t.view.cancelled = true;
    push(AbandonTransfer{id, "cancelled by the sender", std::nullopt, true});
    return;
  }
  // Refused after parts were accepted (a later part needs more space than
  // there is): their pieces stop; what they made stays for a later run.
  if (const auto* no = std::get_if<wire::Refuse>(&answer); no && t.view.early_entries > 0 && !t.failed) {
    push(RecvNote{"offer_refused", t.asked_on, "after " + std::to_string(t.view.early_entries) + " entries: " + no->message});
    abandon_early(t, no->message, false);
  }
  if (ended_) {
    // Prepared after the session ended (the user answered late, a resume
    // read-back ran long): nothing will arrive; what the engine made for it
    // stays for a later run, as for any transfer the end caught.
    if (std::holds_alternative<wire::Accept>(answer)) {
      t.failed = true;
      ++failures_;
      push(AbandonTransfer{id, end_reason_, std::nullopt});
    }
    return;
  }
  send_answer(t.asked_on, answer);
}

void Receiver::send_answer(LaneNo preferred, const std::variant<wire::Accept, wire::Refuse>& answer) {
  const auto* a = std::get_if<wire::Accept>(&answer);
  const size_t per = verdicts_per_accept();
  if (!a || a->files.size() <= per) return std::visit([&](const auto& m) { reply(preferred, m); }, answer);
  // Every verdict goes ahead of the accept, `per` a frame, in order
  // (handle_offer_prepared refused an offer that does not take them so):
  // the accept keeps its room for held ranges and paths.
  for (size_t from = 0; from < a->files.size(); from += per) {
    const size_t to = std::min(a->files.size(), from + per);
    reply(preferred, wire::AcceptFiles{a->transfer_id, {a->files.begin() + static_cast<ptrdiff_t>(from),
                                                        a->files.begin() + static_cast<ptrdiff_t>(to)}});
  }
  wire::Accept rest = *a;
  rest.files.clear();
  reply(preferred, std::move(rest));
}

void Receiver::handle_piece_verified(LaneNo lane, uint32_t id, uint32_t piece, const PieceRecord& record,
                                     Duration recv_duration, Time now) {
  auto it = transfers_.find(id);
  if (ended_ || it == transfers_.end() || !taking_pieces(id)) return;
  Transfer& t = it->second;
  if (t.failed || t.result) return;
  const bool first = t.pieces.emplace(piece, record).second;
  if (first) {
    // Bytes sent again over a range held from an earlier run (the sender
    // found it changed): the new piece is what the root hash covers.
    std::erase_if(t.held, [&](const PieceRecord& h) {
      const bool overlaps = h.offset < record.offset + record.length && record.offset < h.offset + h.length;
      if (overlaps) (h.hash.size ? t.view.held_bytes : t.view.kept_bytes) -= h.length;
      return overlaps;
    });
    t.view.verified_bytes += record.length;
    if (t.early) add_verified(t, record.offset, record.length);
    t.view.lane_bytes[lane] += record.length;
    t.view.lane_pieces[lane] += 1;
  }
  const Lane* l = find(lane);
  // A lane whose transport acks its pieces told the sender already; the root
  // hash at the end confirms every piece.
  if (l && l->open && !l->traits.transport_acks)
    push(RecvSendMessage{lane, wire::Ack{id, piece, static_cast<uint64_t>(std::max<int64_t>(0, recv_duration.ns())),
                                         wire::AckStatus::ok}});
  if (t.done) {
    t.done_deadline = now + cfg_.done_wait;  // its patience counts from the last progress
    try_finish(t, now);
  }
}

void Receiver::handle_piece_rejected(LaneNo lane, uint32_t id, uint32_t piece, wire::AckStatus why, Time) {
  if (!taking_pieces(id)) return;
  const Lane* l = find(lane);
  const wire::Ack ack{id, piece, 0, why};
  if (l && l->open && l->traits.carries_messages) push(RecvSendMessage{lane, ack});
  else reply(UINT32_MAX, wire::LaneAck{lane, ack});
  push(RecvNote{"piece_rejected", lane, "piece " + std::to_string(piece)});
}

void Receiver::try_finish(Transfer& t, Time now) {
  if (ended_ || !t.done || t.finalizing || t.result || t.failed) return;
  // Cheap first: the bytes verified and held must add up to the whole
  // (called for every piece verified after done, under the engine's lock).
  if (t.view.verified_bytes + t.view.held_bytes + t.view.kept_bytes < t.view.total && now < t.done_deadline) return;
  std::vector<PieceRecord> records = t.held;
  for (const auto& [id, r] : t.pieces) records.push_back(r);
  if (!tiles(records, t.view.total)) {
    if (now >= t.done_deadline)
      fail(t, wire::ResultStatus::incomplete, "the verified pieces do not cover every byte of the transfer");
    return;  // pieces still on their way to the disk (UDP lanes): wait
  }
  const wire::Digest root = cfg_.root_hash ? cfg_.root_hash(t.offer->hash, std::move(records)) : wire::Digest{};
  if (!(root == t.done->root)) return fail(t, wire::ResultStatus::root_mismatch, "the root hash does not match");
  t.finalizing = true;
  push(FinalizeTransfer{t.offer->transfer_id, t.held});
}

void Receiver::fail(Transfer& t, wire::ResultStatus status, const std::string& message) {
  if (t.result) return;
  t.failed = true;
  t.result = wire::TransferResult{t.offer->transfer_id, status, message};
  t.view.result = status;
  ++failures_;
  push(AbandonTransfer{t.offer->transfer_id, message, status});
  send_result(t);
}

void Receiver::send_result(const Transfer& t) {
  const uint32_t id = t.offer->transfer_id;
  if (bye_after_ != id) return reply(t.done_on.value_or(t.asked_on), *t.result);
  // The session ends behind it: on every lane that carries messages, each
  // ahead of that lane's close, so a lane that died silently (the one done
  // came on, say) cannot leave the sender with closed lanes and no verdict.
  for (const auto& l : lanes_)
    if (l.open && l.joined && l.traits.carries_messages) push(RecvSendMessage{l.id, *t.result});
  end_session("the sender said bye with its done", true);
}

void Receiver::handle_transfer_failed(uint32_t id, wire::ResultStatus status, const std::string& message, Time) {
  auto it = transfers_.find(id);
  if (it == transfers_.end() || !taking_pieces(id) || ended_) return;
  fail(it->second, status, message);
}

void Receiver::handle_finalized(uint32_t id, wire::ResultStatus status, const std::string& message, Time) {
  auto it = transfers_.find(id);
  if (it == transfers_.end() || !it->second.finalizing || it->second.result) return;
  Transfer& t = it->second;
  if (status != wire::ResultStatus::verified) return fail(t, status, message);
  t.result = wire::TransferResult{id, status, "verified"};
  t.view.result = status;
  t.view.finished = true;
  send_result(t);
}

void Receiver::handle_udp_lane_opened(LaneNo id, const std::string& local, const std::string& error, Time now) {
  Lane* l = find(id);
  const auto asked = udp_asked_on_.find(id);
  if (!l || asked == udp_asked_on_.end()) return;
  const LaneNo via = asked->second;
  udp_asked_on_.erase(asked);
  if (!error.empty()) {
    l->open = false;
    l->close_reason = error;
    push(RecvNote{"lane_refused", id, error});
    if (!ended_) reply(via, wire::UdpReady{id, "", error});
    return;
  }
  if (ended_) return;
  push(RecvNote{"lane_open", id, "udp " + local});
  reply(via, wire::UdpReady{id, local, ""});
  (void)now;
}

void Receiver::end_session(const std::string& reason, bool drain) {
  if (ended_) return;
  ended_ = true;
  end_reason_ = reason;
  for (auto& [id, t] : transfers_) {
    if (t.result || t.failed || !taking_pieces(id)) continue;  // ended already (a verdict, a cancel)
    // Accepted but never finished: the temporary files and the journal of
    // what in them is verified stay for a later run. Nothing counts from
    // now on (a piece still being written is not news), and a transfer
    // already being put in place finishes or not as the engine says.
    if (t.finalizing) continue;
    t.failed = true;
    ++failures_;
    push(AbandonTransfer{id, reason, std::nullopt});
  }
  for (auto& l : lanes_) {
    if (!l.open) continue;
    l.open = false;
    l.close_reason = reason;
    push(RecvCloseLane{l.id, reason, drain});
  }
  push(SessionEnded{failures_, reason});
}

void Receiver::handle_peer_returned(Time) {
  // The same sender started another session while this one had no lane that
  // carries messages: it lost this one (it restarted, or its lanes died for
  // good). Ending now lets go of what the new session needs (the transfer's
  // resume journal) instead of holding it for the rest of the grace.
  if (!ended_ && no_message_lane_since_ != Time::never()) end_session("the sender started a new session");
}

void Receiver::close(const std::string& reason, Time) {
  if (ended_) return;
  reply(UINT32_MAX, wire::ErrorMessage{0, reason});
  end_session(reason);
}

void Receiver::handle_timeout(Time now) {
  if (!ended_ && no_message_lane_since_ != Time::never() && now >= no_message_lane_since_ + cfg_.message_lane_grace)
    return end_session("no lane that carries messages came back in time");
  for (auto& [id, t] : transfers_)
    if (t.done && !t.result && !t.finalizing && now >= t.done_deadline) try_finish(t, now);
}

std::optional<ReceiverAction> Receiver::poll_action() {
  if (actions_.empty()) return std::nullopt;
  ReceiverAction a = std::move(actions_.front());
  actions_.pop_front();
  return a;
}

std::optional<Time> Receiver::poll_timeout() const {
  std::optional<Time> out;
  if (!ended_ && no_message_lane_since_ != Time::never()) out = no_message_lane_since_ + cfg_.message_lane_grace;
  for (const auto& [id, t] : transfers_)
    if (t.done && !t.result && !t.finalizing && (!out || t.done_deadline < *out)) out = t.done_deadline;
  return out;
}

}  // namespace braid::session
