#include "engine/transfer/receiver_session.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "core/units_parse.hpp"
#include "engine/files/piece_hasher.hpp"
#include "engine/lanes/endpoint.hpp"
#include "engine/lanes/tcp.hpp"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/lane_lookup.hpp"
#include "engine/transfer/receiver_session_lanes.hpp"

namespace braid::transfer {

using Clock = std::chrono::steady_clock;

namespace {

int exit_code_for_refusal(wire::RefuseReason r) {
  return r == wire::RefuseReason::not_writable ? kExitNotWritable
         : r == wire::RefuseReason::no_space   ? kExitDiskFull
                                               : kExitRefused;
}

int exit_code_for_result(std::optional<wire::ResultStatus> s) {
  if (!s) return kExitFailure;  // the session ended before the transfer did
  return *s == wire::ResultStatus::no_space       ? kExitDiskFull
         : *s == wire::ResultStatus::write_failed ? kExitNotWritable
                                                  : kExitVerifyFailed;
}

}  // namespace

ReceiverSession::ReceiverSession(const ReceiverConfig& cfg, EventLog& log, std::string peer,
                                 std::vector<uint8_t> peer_key, uint64_t session_id, const security::LaneSecret& secret)
    : cfg_(cfg),
      log_(log),
      peer_(std::move(peer)),
      peer_key_(std::move(peer_key)),
      session_id_(session_id),
      secret_(secret),
      udp_writer_(std::make_unique<SerialWorker>([this](uint64_t queued) {
        if (queued <= kUdpWriteBacklog) release_udp_credit();
      })) {}

ReceiverSession::~ReceiverSession() {
  // UDP lanes first: they post to the writer. Taken out under mu_ (the
  // writer's release_udp_credit reads them there), ended outside it (their
  // on_closed posts to the writer).
  std::vector<std::unique_ptr<udp::UdpRecvLane>> ending;
  {
    std::lock_guard lock(mu_);
    for (auto& u : udp_lanes_) ending.push_back(std::move(u->lane));
  }
  ending.clear();
  for (auto& l : lanes_) l->link->shutdown();  // a send the writer is blocked in fails now
  for (auto& l : lanes_)
    if (l->reader.joinable()) l->reader.join();
  // stop() first: the writer's last after_each (release_udp_credit) reads
  // udp_writer_, which reset() would already have emptied (a crash seen in
  // SessionFixture.AUdpLaneThatDiesMidTransferHoldsNothingUp, ~1 run in 4).
  udp_writer_->stop();
  udp_writer_.reset();
}

Time ReceiverSession::now() const {
  return Time::from_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch_).count());
}

void ReceiverSession::note(const std::string& line) const {
  if (!cfg_.quiet) LiveDisplay::say("braid: " + line);  // above the live display, if one is drawn
}

int ReceiverSession::outcome() const {
  std::lock_guard lock(mu_);
  return outcome_;
}

void ReceiverSession::set_outcome_locked(int code) {
  if (outcome_ == 0) outcome_ = code;
}

std::shared_ptr<IncomingTransfer> ReceiverSession::transfer_locked(uint32_t id) const {
  auto it = transfers_.find(id);
  return it == transfers_.end() ? nullptr : it->second;
}

// ---- the machine ----------------------------------------------------------------

void ReceiverSession::act(session::RecvSendMessage& a) {
  lanes::LaneLink* link = nullptr;
  {
    std::lock_guard lock(mu_);
    if (Lane* l = find_lane_by_id(lanes_, a.lane)) link = l->link.get();
  }
  if (!link) return;
  const session::Encoded e = session::encode(a.msg);
  if (!link->send(e.type, e.payload))
    feed([&](session::Receiver& m) { m.handle_lane_failed(a.lane, "write failed: " + link->send_error(), now()); });
}

void ReceiverSession::act(session::RecvCloseLane& a) {
  udp::UdpRecvLane* udp = nullptr;
  {
    std::lock_guard lock(mu_);
    if (Lane* l = find_lane_by_id(lanes_, a.lane)) {
      if (l->open) {
        l->open = false;
        l->close_reason = a.reason;
      }
      if (a.drain) {
        l->link->shutdown_write();  // the reader reads on to the sender's end (run() waits a little)
        drain_ = true;
      } else {
        l->link->shutdown();
      }
      return;
    }
    if (UdpLane* u = find_lane_by_id(udp_lanes_, a.lane); u && u->lane) {
      u->alive = false;
      if (u->close_reason.empty()) u->close_reason = a.reason;
      udp = u->lane.get();
    }
  }
  if (udp) udp->close(a.reason);  // its on_closed follows on the port's thread
}

void ReceiverSession::act(session::PrepareOffer& a) {
  std::lock_guard lock(mu_);
  jobs_.push_back(std::move(a));
  cv_.notify_all();
}

void ReceiverSession::act(session::PrepareOfferPart& a) {
  std::lock_guard lock(mu_);
  jobs_.push_back(std::move(a));
  cv_.notify_all();
}

void ReceiverSession::act(session::FinalizeTransfer& a) {
  std::lock_guard lock(mu_);
  jobs_.push_back(a);
  cv_.notify_all();
}

void ReceiverSession::act(session::AbandonTransfer& a) {
  {
    std::lock_guard lock(mu_);
    if (!a.cancelled) set_outcome_locked(exit_code_for_result(a.status));  // the sender's choice is no failure here
    if (auto t = transfer_locked(a.transfer)) t->over = true;  // bytes still arriving are dropped from now on
    jobs_.push_back(a);  // the journal's last commit may take a while: the control thread's
    cv_.notify_all();
  }
  if (a.status) {
    log_.write("status", {{"status", "failed"}, {"transfer", a.transfer}, {"message", json_safe(a.reason)}});
    note("transfer " + std::to_string(a.transfer) + " failed: " + a.reason);
  }
  drop_udp_pieces(a.transfer);
}

void ReceiverSession::act(session::ExpectPiece& a) { expect_udp_piece(a.header); }

void ReceiverSession::act(session::OpenUdpLane& a) { open_udp_lane(a); }

void ReceiverSession::act(session::SessionEnded& a) {
  std::lock_guard lock(mu_);
  ended_ = true;
  cv_.notify_all();
  end_reason_ = a.reason;
}

void ReceiverSession::act(session::RecvNote& a) {
  std::string local, remote, kind = a.detail;
  {
    std::lock_guard lock(mu_);
    if (Lane* l = find_lane_by_id(lanes_, a.lane)) local = l->local, remote = l->remote;
    if (UdpLane* u = find_lane_by_id(udp_lanes_, a.lane)) kind = "udp", local = u->local;
  }
  if (a.event == "lane_open") {
    nlohmann::json f = {{"lane", a.lane}, {"kind", kind}};
    if (!local.empty()) f["local"] = local;
    if (!remote.empty()) f["remote"] = remote;
    log_.write("lane_open", f);
    return;
  }
  log_.write(a.event, {{"lane", a.lane}, {"reason", json_safe(a.detail)}});
  if (a.event == "lane_closed")
    note("lane " + std::to_string(a.lane) + " (" + (remote.empty() ? "udp " + local : remote) + ") closed: " + a.detail);
}

// ---- the control thread -------------------------------------------------------------

void ReceiverSession::run(std::unique_ptr<lanes::LaneLink> link, const std::vector<std::string>& advertised) {
  session::ReceiverConfig mc;
  mc.max_lanes = cfg_.max_lanes;
  mc.max_joining = std::max<size_t>(cfg_.max_lanes, mc.max_joining);
  mc.advertised = advertised;
  mc.root_hash = files::root_hash_of_ranges;
  mc.early_answers = cfg_.early_answers;
  mc.protocol = cfg_.protocol;
  log_.write("lane_open", {{"lane", 0}, {"local", lanes::local_endpoint_of(link->fd()).str()},
                           {"remote", lanes::peer_endpoint_of(link->fd()).str()}});
  Lane* lane0 = add_lane(std::move(link));
  lane0->joined = true;  // it came with the session
  {
    std::lock_guard lock(mu_);
    // The host's addresses may have changed between the accept and here.
    if (advertised_early_) mc.advertised = advertised_;
    else advertised_ = advertised;
    machine_ = std::make_unique<session::Receiver>(std::move(mc));
    if (interrupted_) machine_->close(interrupt_reason_, now());  // interrupted before it ran
  }
  drive([&](session::Receiver& m) { m.start(session::LaneTraits::tcp(), now()); });
  start_reader(*lane0);

  std::unique_lock lock(mu_);
  for (;;) {
    auto wake = Clock::now() + std::chrono::milliseconds(200);
    if (auto to = machine_->poll_timeout()) wake = std::min(wake, epoch_ + std::chrono::nanoseconds(to->ns()));
    cv_.wait_until(lock, wake, [&] { return !jobs_.empty() || ended_; });
    if (!jobs_.empty()) {
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      std::visit([this](auto& j) { run_job(j); }, job);
      lock.lock();
      continue;
    }
    if (ended_) break;
    lock.unlock();
    drive([&](session::Receiver& m) { m.handle_timeout(now()); });
    expire_waiting_offers();
    lock.lock();
  }
  // The session ended behind its verdict: the lanes stopped writing and
  // read on until the sender closes them (it does on reading the verdict),
  // at most kGoodbyeDrain, so no close with unread bytes resets a lane
  // whose verdict is still on its way.
  if (drain_)
    cv_.wait_for(lock, kGoodbyeDrain, [&] {
      return std::all_of(lanes_.begin(), lanes_.end(), [](const auto& l) { return l->reader_ended; });
    });
  // Offers still waiting: a late decision reaches nothing now.
  for (auto& [id, w] : waiting_) w.pending->withdraw();
  const std::string reason = end_reason_;
  std::vector<lanes::LaneLink*> links;
  std::vector<udp::UdpRecvLane*> udp;
  for (auto& l : lanes_) links.push_back(l->link.get());
  for (auto& u : udp_lanes_)
    if (u->lane) udp.push_back(u->lane.get());
  lock.unlock();
  for (auto* l : links) l->shutdown();
  for (auto* u : udp) u->close("session ended");
  if (reason.rfind("the sender ended the session", 0) == 0) {
    log_.write("peer_error", {{"message", json_safe(reason)}});
    note(reason);
  }
  log_.write("status", {{"status", "session_closed"}, {"peer", peer_}, {"reason", json_safe(reason)}});
}

OfferContext ReceiverSession::offer_context() {
  OfferContext ctx;
  ctx.root_fd = cfg_.root_fd;
  ctx.peer = peer_;
  ctx.peer_key = peer_key_;
  ctx.links = cfg_.links;
  ctx.log = &log_;
  ctx.note = [this](const std::string& line) { note(line); };
  ctx.ask = [this](const wire::Offer& o) { return cfg_.yes || ask_on_terminal(peer_, o); };
  ctx.interrupted = &interrupted_;
  ctx.faults = cfg_.disk_faults;
  return ctx;
}

void ReceiverSession::run_job(session::PrepareOffer& a) {
  {
    std::lock_guard lock(mu_);
    if (ended_) return;  // nobody is waiting for the answer: make nothing for it
  }
  const OfferContext ctx = offer_context();
  if (cfg_.decide_offer) return ask_decider(a.offer, ctx);
  answer_offer(a.offer->transfer_id, prepare_offer(ctx, a.offer));
}

void ReceiverSession::run_job(session::PrepareOfferPart& a) {
  {
    std::lock_guard lock(mu_);
    if (ended_) return;  // nobody is waiting for the answer: make nothing for it
  }
  const OfferContext ctx = offer_context();
  std::shared_ptr<IncomingTransfer> t;
  if (a.first == 0) {
    // The first part: answered part by part, or whole after the last (as protocol 8).
    const wire::Offer& head = *a.head;
    const std::span<const wire::ManifestEntry> first_entries =
        a.parts.empty() ? std::span<const wire::ManifestEntry>{} : std::span<const wire::ManifestEntry>(*a.parts.front());
    if (const std::string why = why_not_early(ctx, head, first_entries, cfg_.decide_offer || !cfg_.yes); !why.empty()) {
      log_.write("offer_whole", {{"transfer", a.transfer}, {"reason", why}});
      return drive([&](session::Receiver& m) { m.handle_part_declined(a.transfer, now()); });
    }
    if (auto refused = screen_offer(ctx, head)) return answer_offer(a.transfer, *refused);
    auto begun = begin_offer_parts(ctx, head);
    if (auto* no = std::get_if<wire::Refuse>(&begun)) return answer_offer(a.transfer, *no);
    t = std::get<0>(begun);
    std::lock_guard lock(mu_);
    transfers_[a.transfer] = t;  // its pieces are written from its first accept_part on
  } else {
    std::lock_guard lock(mu_);
    t = transfer_locked(a.transfer);
  }
  if (!t || t->over) return;  // refused or abandoned meanwhile
  if (auto no = add_offer_part(ctx, *t, a.first, std::move(a.parts))) return answer_offer(a.transfer, *no);
  // As the walk goes on, what was written before goes (an offer in path
  // order): the receiver holds a window of the manifest, not the tree.
  uint64_t verified = 0;
  {
    std::lock_guard lock(mu_);
    verified = machine_->verified_prefix(a.transfer);
  }
  if (const size_t gone = t->tree->release_written(verified); gone > 0)
    log_.write("entries_forgotten", {{"transfer", a.transfer}, {"entries", gone}, {"before_byte", verified},
                                     {"held", t->tree->entries_held()}, {"directories_held", t->tree->directories_held()}});
  if (!a.whole) return drive([&](session::Receiver& m) { m.handle_part_prepared(a.transfer, now()); });
  auto closing = finish_offer_parts(ctx, *t, a.whole);
  if (auto* no = std::get_if<wire::Refuse>(&closing)) return answer_offer(a.transfer, *no);
  {
    std::lock_guard lock(mu_);
    t->offer = a.whole;  // its fields: the entries are the tree's (the lanes read only its id, chunk size and hash)
    t->tally.hole_bytes = t->part_hole_bytes;  // a whole offer's prepare counts them
  }
  answer_offer(a.transfer, PreparedOffer{t, std::get<wire::Accept>(closing)});
}

void ReceiverSession::ask_decider(const std::shared_ptr<const wire::Offer>& shared, const OfferContext& ctx) {
  const wire::Offer& offer = *shared;
  const uint32_t id = offer.transfer_id;
  if (auto refused = screen_offer(ctx, offer)) return answer_offer(id, *refused);
  if (offer.discard) return answer_offer(id, prepare_accepted_offer(ctx, shared));  // a probe: nothing lands, no question
  // The decision comes back as a job for this thread; after run() ends the
  // offer is withdrawn and nothing comes.
  auto pending = std::make_shared<PendingOffer>([this, shared](const OfferDecision& d) {
    std::lock_guard lock(mu_);
    jobs_.push_back(OfferDecided{shared, d});
    cv_.notify_all();
  });
  waiting_[id] = Waiting{pending, Clock::now() + cfg_.decision_timeout};
  OfferQuestion q;
  q.session_id = session_id_;
  q.transfer_id = id;
  q.peer = peer_;
  q.paired_now = cfg_.paired_now;
  q.entries = offer.entries.size();
  q.bytes = offer.total_bytes();
  q.names = offer_names(offer, 5);
  log_.write("offer_waiting", {{"transfer", id}, {"peer", peer_}});
  cfg_.decide_offer(q, pending);
}

void ReceiverSession::expire_waiting_offers() {
  const auto t = Clock::now();
  for (auto& [id, w] : waiting_)
    if (t >= w.deadline && w.pending->open()) {
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(cfg_.decision_timeout).count();
      w.pending->decide({false, wire::RefuseReason::declined,
                         "nobody accepted the offer within " + std::to_string(secs) + " s"});
    }
}

void ReceiverSession::run_job(OfferDecided& a) {
  const uint32_t id = a.offer->transfer_id;
  waiting_.erase(id);
  {
    std::lock_guard lock(mu_);
    if (ended_) return;
  }
  const OfferContext ctx = offer_context();
  if (!a.decision.accept)
    return answer_offer(id, refuse_offer(ctx, id, a.decision.reason,
                                         a.decision.message.empty() ? "declined" : a.decision.message));
  answer_offer(id, prepare_accepted_offer(ctx, a.offer));
}

void ReceiverSession::answer_offer(uint32_t id, std::variant<PreparedOffer, wire::Refuse> answer) {
  if (auto* refused = std::get_if<wire::Refuse>(&answer)) {
    {
      std::lock_guard lock(mu_);
      set_outcome_locked(exit_code_for_refusal(refused->reason));
    }
    wire::Refuse r = *refused;
    return drive([&](session::Receiver& m) { m.handle_offer_prepared(id, r, now()); });
  }
  PreparedOffer& p = std::get<PreparedOffer>(answer);
  if (!p.transfer) {  // a dry run: the answer is all there is
    note("dry run for '" + peer_ + "': " + std::to_string(p.accept.files.size()) + " of the offered files exist here, " +
         std::to_string(p.accept.extraneous_count) + " entries would be deleted; nothing changed");
    wire::Accept dry = p.accept;
    return drive([&](session::Receiver& m) { m.handle_offer_prepared(id, dry, now()); });
  }
  const uint64_t held = p.transfer->resume ? p.transfer->resume->held_bytes() : 0;
  const size_t entries = p.transfer->entry_count();
  const uint64_t bytes = p.transfer->total();
  log_.write("status", {{"status", "receiving"}, {"transfer", id}});
  if (p.transfer->offer->discard)
    note("probe from '" + peer_ + "': measuring the paths, nothing is written");
  else
    note("receiving " + std::to_string(entries) + (entries == 1 ? " entry, " : " entries, ") + format_size(Bytes(bytes)) + " from '" + peer_ + "'" +
       (held ? ", " + format_size(Bytes(held)) + " of it here already (resume)" : ""));
  drive([&](session::Receiver& m) {
    transfers_[id] = p.transfer;
    m.handle_offer_prepared(id, p.accept, now());
  });
}

void ReceiverSession::run_job(session::FinalizeTransfer& a) {
  std::shared_ptr<IncomingTransfer> t;
  {
    std::lock_guard lock(mu_);
    t = transfer_locked(a.transfer);
  }
  if (!t || t->over) return;  // abandoned meanwhile (the session ended): its journal stays
  int err = 0;
  const std::string failure = t->finalize(err, a.held);
  for (const auto& e : t->delete_errors) note("--delete: " + e);
  if (t->tree) {
    for (const auto& w : t->tree->metadata_warnings()) {
      note("metadata: " + w);
      log_.write("metadata_not_set", {{"transfer", a.transfer}, {"what", json_safe(w)}});
    }
    if (const size_t more = t->tree->metadata_failures() - t->tree->metadata_warnings().size(); more)
      note("metadata: " + std::to_string(more) + " more entries' owners or xattrs were not set");
  }
  if (!failure.empty()) {
    const bool full = err == ENOSPC || err == EDQUOT;
    const auto status = full ? wire::ResultStatus::no_space : wire::ResultStatus::write_failed;
    return drive([&](session::Receiver& m) { m.handle_finalized(a.transfer, status, failure, now()); });
  }
  TransferReport rep;
  {
    std::lock_guard lock(mu_);
    rep = report_locked(*t, true);
    reports_.push_back(rep);
  }
  if (cfg_.on_report) cfg_.on_report(rep);
  drop_udp_pieces(a.transfer);
  log_.write("status", {{"status", "verified"}, {"transfer", a.transfer}, {"bytes", rep.bytes},
                        {"resumed_bytes", rep.resumed_bytes}, {"seconds", rep.seconds}});
  note("transfer " + std::to_string(a.transfer) + ": " + std::to_string(rep.files) + (rep.files == 1 ? " file, " : " files, ") +
       format_size(Bytes(rep.bytes)) + " from '" + peer_ + "' arrived and verified" +
       (rep.resumed_bytes ? " (" + format_size(Bytes(rep.resumed_bytes)) + " resumed from an earlier run)" : ""));
  drive([&](session::Receiver& m) { m.handle_finalized(a.transfer, wire::ResultStatus::verified, "verified", now()); });
}

void ReceiverSession::run_job(session::AbandonTransfer& a) {
  std::shared_ptr<IncomingTransfer> t;
  {
    std::lock_guard lock(mu_);
    t = transfer_locked(a.transfer);
  }
  if (t) t->abandon(a.status);
}

// ---- reports ----------------------------------------------------------------------

TransferReport ReceiverSession::report_locked(const IncomingTransfer& t, bool finished) const {
  const auto view = machine_->transfer(t.offer->transfer_id).value_or(session::Receiver::TransferView{});
  const uint64_t total = t.total();
  TransferReport rep;
  rep.role = "recv";
  rep.transfer_id = t.offer->transfer_id;
  rep.peer = peer_;
  rep.hash = wire::hash_algo_name(t.offer->hash);
  rep.chunk_size = t.offer->chunk_size;
  rep.bytes = total;
  rep.files = t.file_count();
  rep.reverified_bytes = t.reverified_bytes;
  rep.refetched_bytes = t.refetched_bytes;
  rep.resume_check_seconds = t.resume_check_seconds;
  rep.seconds = std::chrono::duration<double>(Clock::now() - t.start).count();
  rep.buffered_peak_bytes = udp_buffered_peak_;
  if (!finished) {
    rep.resumed_bytes = t.resume ? t.resume->held_bytes() : 0;
    rep.held_bytes = t.resume ? t.resume->claimed_bytes() : 0;  // the journal's claim: what the next run resumes
    rep.status = view.result ? "failed" : view.cancelled ? "cancelled" : interrupted_ ? "interrupted" : "incomplete";
    return rep;
  }
  const uint64_t resumed = view.held_bytes;
  const uint64_t crossed = total - std::min(total, resumed + view.kept_bytes);
  rep.resumed_bytes = resumed;
  rep.sent_bytes = crossed;
  rep.hole_bytes = t.tally.hole_bytes;
  if (t.offer->sync.sync) {
    rep.sync.on = true;
    rep.sync.files_sent = t.tally.files_sent;
    rep.sync.files_unchanged = t.tally.files_unchanged;
    rep.sync.files_skipped = t.tally.files_skipped;
    rep.sync.files_updated = t.tally.files_updated;
    rep.sync.kept_bytes = view.kept_bytes - std::min(view.kept_bytes, t.tally.hole_bytes);
    rep.sync.reused_bytes = resumed;
    rep.sync.extraneous = t.extraneous_found;
    rep.sync.deleted = t.deleted;
  }
  rep.held_bytes = total;
  if (t.tree)
    for (const auto& l : t.tree->skipped_links()) rep.skipped.push_back(SkippedEntry{l.path, l.reason, l.target});
  rep.rate_bytes_per_sec = rep.seconds > 0 ? static_cast<double>(crossed) / rep.seconds : 0;  // what crossed the network
  rep.verified = true;
  rep.status = "verified";
  if (view.root) rep.root_hash = view.root->hex();
  auto lane_report = [&](uint32_t id) {
    LaneReport lr;
    lr.lane_id = id;
    auto b = view.lane_bytes.find(id);
    lr.bytes = b == view.lane_bytes.end() ? 0 : b->second;
    auto c = view.lane_pieces.find(id);
    lr.chunks = c == view.lane_pieces.end() ? 0 : c->second;
    lr.share = crossed ? static_cast<double>(lr.bytes) / static_cast<double>(crossed) : 0;
    return lr;
  };
  for (const auto& u : udp_lanes_) {
    LaneReport lr = lane_report(u->id);
    lr.kind = "udp";
    lr.name = "lane" + std::to_string(u->id) + " udp";
    lr.local = u->local;
    if (u->lane) {
      const auto c = u->lane->counters();
      lr.wire_bytes = c.data_bytes_received;
      lr.rejected_frames = c.rejected_total();
    }
    lr.open_at_end = u->alive;
    lr.close_reason = u->close_reason;
    rep.lanes.push_back(lr);
  }
  for (const auto& l : lanes_) {
    LaneReport lr = lane_report(l->id);
    lr.kind = session::lane_kind_name(l->traits.kind);
    lr.name = "lane" + std::to_string(l->id);
    lr.local = l->local;
    lr.remote = l->remote;
    lr.wire_bytes = l->link->bytes_received();
    lr.rejected_frames = l->link->rejected_total();
    lr.open_at_end = l->open;
    lr.close_reason = l->close_reason;
    rep.lanes.push_back(lr);
  }
  return rep;
}

std::vector<LiveTransfer> ReceiverSession::live() const {
  std::lock_guard lock(mu_);
  std::vector<LiveTransfer> out;
  if (!machine_) return out;
  for (const auto& [id, t] : transfers_) {
    const auto view = machine_->transfer(id);
    if (!view || !t || t->offer->discard || view->cancelled) continue;  // a probe has no end to show progress to
    LiveTransfer lt;
    lt.label = "recv '" + peer_ + "'";
    lt.id = std::to_string(session_id_) + "/" + std::to_string(id);
    lt.total = view->total;
    lt.done = std::min(view->total, view->verified_bytes + view->held_bytes);
    lt.resumed = view->held_bytes;
    lt.elapsed = std::chrono::duration<double>(Clock::now() - t->start).count();
    lt.ended = view->finished || view->result.has_value() || t->over;
    auto bytes_on = [&](uint32_t lane) {
      const auto b = view->lane_bytes.find(lane);
      return b == view->lane_bytes.end() ? uint64_t{0} : b->second;
    };
    for (const auto& l : lanes_) {
      uint32_t rtt_us = 0, retransmits = 0;
      if (!l->open || !l->link || !lanes::tcp_path_info(l->link->fd(), rtt_us, retransmits)) rtt_us = 0;
      lt.lanes.push_back({l->id, l->local, l->remote, bytes_on(l->id), l->open, rtt_us / 1000.0});
    }
    for (const auto& u : udp_lanes_) lt.lanes.push_back({u->id, u->local, "udp", bytes_on(u->id), u->alive});
    out.push_back(std::move(lt));
  }
  return out;
}

std::vector<TransferReport> ReceiverSession::reports() const {
  std::lock_guard lock(mu_);
  std::vector<TransferReport> out = reports_;
  if (!machine_) return out;
  for (const auto& [id, t] : transfers_) {
    const auto view = machine_->transfer(id);
    if (view && view->finished) continue;
    if (t->offer->discard) continue;  // a probe's measurement, not a transfer of files
    out.push_back(report_locked(*t, false));
  }
  return out;
}

void ReceiverSession::interrupt(const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    if (interrupted_) return;
    interrupt_reason_ = reason;
    interrupted_ = true;
    if (!machine_) return;  // run() closes it as soon as it starts
  }
  log_.write("interrupted", {{"reason", reason}});
  // The sender hears why before the lanes close, and says so — unless a
  // send is stuck on a lane whose peer stopped reading: then the lanes are
  // shut first (which fails that send), and the machine closes after.
  std::unique_lock order(act_mu_, std::defer_lock);
  if (!order.try_lock_for(std::chrono::seconds(1))) {
    std::vector<lanes::LaneLink*> links;
    {
      std::lock_guard lock(mu_);
      for (auto& l : lanes_) links.push_back(l->link.get());
    }
    for (auto* l : links) l->shutdown();
  } else {
    order.unlock();
  }
  drive([&](session::Receiver& m) { m.close(reason, now()); });
}

void ReceiverSession::advertise(const std::vector<std::string>& addresses) {
  std::lock_guard lock(mu_);
  advertised_ = addresses;  // UDP lanes may open on the new ones
  if (!machine_) {
    advertised_early_ = true;  // run() starts the machine with these
    return;
  }
  if (ended_) return;
  // One pending change at most: a newer list replaces one not sent yet.
  for (auto& j : jobs_)
    if (auto* pending = std::get_if<Advertise>(&j)) {
      pending->addresses = addresses;
      return;
    }
  jobs_.push_back(Advertise{addresses});
  cv_.notify_all();
}

void ReceiverSession::run_job(Advertise& a) {
  drive([&](session::Receiver& m) { m.advertise(a.addresses, now()); });
}

void ReceiverSession::peer_returned() {
  drive([&](session::Receiver& m) { m.handle_peer_returned(now()); });
}

uint64_t ReceiverSession::rejected_frames() const {
  std::lock_guard lock(mu_);
  uint64_t n = 0;
  for (const auto& l : lanes_) n += l->link->rejected_total();
  for (const auto& u : udp_lanes_)
    if (u->lane) n += u->lane->counters().rejected_total();
  return n;
}

}  // namespace braid::transfer
