// What the sender tells while and after it sends: the progress deciles and
// the per-lane samples of `--log`, the progress line and the transfer's
// report — all read off the session machine's scheduler (acks, never socket
// writes) and the lanes' own counters.
#include <algorithm>

#include "core/session/sync.hpp"
#include "engine/transfer/exit_codes.hpp"
#include "engine/transfer/live_display.hpp"
#include "engine/transfer/sender_session.hpp"
#include "engine/transfer/sender_session_active.hpp"

namespace braid::transfer {

namespace {
int exit_code_for_refusal(wire::RefuseReason r) {
  switch (r) {
    case wire::RefuseReason::not_writable: return kExitNotWritable;
    case wire::RefuseReason::no_space: return kExitDiskFull;
    default: return kExitRefused;
  }
}
int exit_code_for_result(wire::ResultStatus s) {
  switch (s) {
    case wire::ResultStatus::verified: return kExitOk;
    case wire::ResultStatus::no_space: return kExitDiskFull;
    case wire::ResultStatus::write_failed: return kExitNotWritable;
    default: return kExitVerifyFailed;
  }
}

}  // namespace

// The machine's outcome as the command line says it: exit code, one line,
// the report.
TransferOutcome SenderSession::outcome_locked(const files::SourceTree& tree, const TransferOptions& opts) {
  Active& t = *active_;
  const session::TransferOutcome o = *t.outcome;
  TransferOutcome out;
  if (o.end == session::TransferOutcome::End::refused) {
    log_.write("status", {{"status", "refused"}, {"reason", wire::refuse_reason_name(o.refusal)},
                          {"message", json_safe(o.message)}});
    out = {exit_code_for_refusal(o.refusal), "the receiver refused the transfer: " + o.message, {}};
    return out;
  }
  if (o.end == session::TransferOutcome::End::unsupported) {
    // The receiver cannot read the offer: told before it was sent, or (an
    // offer in TLS's last flight to a receiver that turned out older) as
    // soon as its addresses said so.
    log_.write("status", {{"status", "unsupported"}, {"message", json_safe(o.message)}});
    out = {kExitRefused, o.message, {}};
    return out;
  }
  if (t.display && machine_->scheduler()) draw_progress_locked(true);
  if (machine_->scheduler()) {
    out.report = build_report_locked(tree);
    out.report.policy = opts.policy;
    const Time end = machine_->all_acked_at() != Time::never() ? machine_->all_acked_at() : t.ended_at;
    out.report.seconds = (end - t.start).to_seconds();
    // The session's clock starts with the connect: this is command to the
    // first acked piece, less process start — on any lane kind (the
    // scheduler hears UDP lanes' acks too, which no lane message carries).
    const core::Scheduler& sched = *machine_->scheduler();
    Time first = Time::never();
    for (core::LaneId l = 0; l < sched.lane_count(); ++l) first = std::min(first, sched.stats(l).first_ack);
    if (first != Time::never()) out.report.first_byte_seconds = first.to_seconds();
    out.report.rate_bytes_per_sec =
        out.report.seconds > 0 ? static_cast<double>(out.report.sent_bytes) / out.report.seconds : 0;
  }
  if (opts.sync.sync) {
    wire::Offer offer;
    offer.entries = tree.entries;
    offer.sync = opts.sync;
    const auto& files = o.end == session::TransferOutcome::End::answered ? o.files : machine_->sync_files();
    const auto tally = session::sync::tally(offer, files, machine_->reused_ranges());
    SyncReport& sr = out.report.sync;
    sr.on = true;
    sr.dry_run = opts.sync.dry_run;
    sr.files_sent = tally.files_sent;
    sr.files_unchanged = tally.files_unchanged;
    sr.files_skipped = tally.files_skipped;
    sr.files_updated = tally.files_updated;
    sr.kept_bytes = tally.kept_bytes;
    sr.reused_bytes = machine_->resumed_bytes();
    sr.reused_chunks = machine_->resumed_ranges();
    sr.extraneous = o.end == session::TransferOutcome::End::answered ? o.extraneous_count : machine_->extraneous_count();
    if (opts.sync.dry_run) {
      // What a real run would do, file by file (the receiver's verdicts).
      auto it = files.begin();
      for (size_t i = 0; i < tree.entries.size(); ++i) {
        if (tree.entries[i].kind != wire::EntryKind::file) continue;
        while (it != files.end() && it->entry < i) ++it;
        const bool has = it != files.end() && it->entry == i;
        const std::string what = !has ? "send"
                                 : it->verdict == wire::FileVerdict::older_here ? "update"
                                                                                 : wire::file_verdict_name(it->verdict);
        sr.plan.push_back(what + " " + tree.entries[i].path);
      }
      for (const auto& x : o.extraneous) sr.plan.push_back("delete " + x);
      sr.extraneous_listed = o.extraneous;
    }
  }
  switch (o.end) {
    case session::TransferOutcome::End::answered:
      out.exit_code = kExitOk;
      out.report.role = "send";
      out.report.transfer_id = t.id;
      out.report.peer = peer_name_;
      out.report.files = tree.file_count;
      out.report.bytes = tree.total_bytes;
      out.report.status = "dry_run";
      out.message = "dry run: " + std::to_string(out.report.sync.files_sent) + " files would be sent whole, " +
                    std::to_string(out.report.sync.files_updated) + " updated, " +
                    std::to_string(out.report.sync.files_unchanged) + " are unchanged, " +
                    std::to_string(out.report.sync.files_skipped) + " skipped, " +
                    std::to_string(out.report.sync.extraneous) + " entries deleted; nothing was changed";
      break;
    case session::TransferOutcome::End::result:
      out.exit_code = exit_code_for_result(o.result);
      out.message = o.verified() ? "every file arrived and verified" : "the receiver reports: " + o.message;
      out.report.verified = o.verified();
      out.report.status = wire::result_status_name(o.result);
      break;
    case session::TransferOutcome::End::peer_error:
      out.exit_code = kExitFailure;
      out.message = o.message;
      out.report.status = "peer_error";
      break;
    case session::TransferOutcome::End::bad_piece:
      out.exit_code = kExitVerifyFailed;
      out.message = o.message;
      out.report.status = "failed";
      break;
    case session::TransferOutcome::End::read_failed:
    case session::TransferOutcome::End::stuck:
    case session::TransferOutcome::End::timed_out:
      out.exit_code = kExitFailure;
      out.message = o.message;
      out.report.status = "failed";
      break;
    default:
      out.exit_code = kExitLanesLost;
      out.message = o.message.empty() ? "every lane closed before the receiver confirmed the transfer" : o.message;
      out.report.status = "failed";
      break;
  }
  if (o.end == session::TransferOutcome::End::result && o.verified())
    log_.write("status", {{"status", "verifying"}, {"transfer", t.id}});
  log_.write("status", {{"status", out.exit_code == 0 ? "done" : "failed"}, {"transfer", t.id},
                        {"message", out.message}});
  return out;
}

void SenderSession::log_progress_locked() {
  const core::Scheduler* s = machine_->scheduler();
  if (!active_ || !s) return;
  Active& t = *active_;
  const uint64_t total = s->plan().total().count();
  const uint64_t done = s->plan().delivered_bytes().count();
  while (t.next_decile <= 10 && (total == 0 || done * 10 >= total * static_cast<uint64_t>(t.next_decile))) {
    nlohmann::json lanes = nlohmann::json::array();
    for (size_t i = 0; i < s->lane_count(); ++i) {
      const auto id = static_cast<core::LaneId>(i);
      lanes.push_back({{"lane", machine_->sched_lane(id).value_or(0)},
                       {"rate_bytes_per_sec", s->estimator(id).rate().bytes_per_second()},
                       {"bytes", s->stats(id).useful_bytes.count()},
                       {"alive", s->lane_alive(id)}});
    }
    log_.write("progress", {{"transfer", t.id}, {"percent", t.next_decile * 10}, {"bytes", done}, {"lanes", lanes}});
    ++t.next_decile;
  }
}

// What each lane's scheduler state and transport look like right now: a
// line per kSampleEvery, so rate collapses and stalls can be seen in time.
void SenderSession::log_sample_locked() {
  const core::Scheduler* s = machine_->scheduler();
  if (!log_.enabled() || !active_ || !s) return;
  Active& t = *active_;
  const Time n = now();
  if (n < t.next_sample) return;
  t.next_sample = n + kSampleEvery;
  nlohmann::json lanes = nlohmann::json::array();
  for (size_t i = 0; i < s->lane_count(); ++i) {
    const auto id = static_cast<core::LaneId>(i);
    const LaneNo no = machine_->sched_lane(id).value_or(0);
    nlohmann::json j = {{"lane", no},
                        {"alive", s->lane_alive(id)},
                        {"bytes", s->stats(id).acked_bytes.count()},
                        {"estimate", s->estimator(id).rate().bytes_per_second()},
                        {"rtt_ms", s->planning_rtt(id).to_millis()},
                        {"outstanding", s->outstanding(id).count()},
                        {"flights", s->active_flights(id)},
                        {"stalls", s->stats(id).stalls}};
    if (DataLane* l = lane_locked(no); l && s->lane_alive(id)) j.update(l->sample());
    lanes.push_back(std::move(j));
  }
  log_.write("sample", {{"transfer", t.id}, {"delivered", s->plan().delivered_bytes().count()}, {"lanes", lanes}});
}

// The live display's view of the transfer: per lane its acked useful bytes
// and where it runs (the display groups lanes per path and measures rates).
void SenderSession::draw_progress_locked(bool final) {
  const core::Scheduler* s = machine_->scheduler();
  Active& t = *active_;
  LiveTransfer snap;
  snap.label = "send '" + peer_name_ + "'";
  snap.total = s->plan().total().count();
  snap.done = s->plan().delivered_bytes().count();
  snap.resumed = machine_->resumed_bytes();
  snap.elapsed = (now() - t.start).to_seconds();
  std::map<LaneNo, session::Sender::LaneView> views;
  for (const auto& v : machine_->lanes()) views[v.id] = v;
  for (size_t i = 0; i < s->lane_count(); ++i) {
    const auto id = static_cast<core::LaneId>(i);
    const LaneNo no = machine_->sched_lane(id).value_or(0);
    LiveLane l{no, views[no].path.local, views[no].path.remote, s->stats(id).useful_bytes.count(), s->lane_alive(id)};
    if (DataLane* lane = lane_locked(no)) {
      l.local = lane->local();
      l.remote = lane->remote();
    }
    snap.lanes.push_back(std::move(l));
  }
  if (final) t.display->finish(snap);
  else t.display->update({snap});
}

TransferReport SenderSession::build_report_locked(const files::SourceTree& tree) {
  const core::Scheduler& s = *machine_->scheduler();
  Active& t = *active_;
  TransferReport r;
  r.role = "send";
  r.transfer_id = t.id;
  r.peer = peer_name_;
  r.hash = wire::hash_algo_name(t.source->hash());
  r.chunk_size = s.plan().chunk_size().count();
  r.files = tree.file_count;
  r.bytes = s.plan().delivered_bytes().count();
  r.resumed_bytes = machine_->resumed_bytes();
  r.resume_rejected_bytes = machine_->resume_rejected_bytes();
  const uint64_t not_sent = r.resumed_bytes + machine_->kept_bytes();
  r.sent_bytes = r.bytes - std::min(r.bytes, not_sent);
  // Entries let go (a streamed walk's window) were never synced: no verdicts name them.
  r.hole_bytes = tree.released_hole_bytes + session::sync::hole_bytes(tree.entries, machine_->sync_files());
  r.stalls = s.total_stalls();
  r.duplicates = s.total_duplicates();
  r.abandoned = s.total_abandoned();
  // Shares of what this run sent: resumed bytes crossed no lane.
  const double total = static_cast<double>(std::max<uint64_t>(1, r.sent_bytes));
  std::map<LaneNo, session::Sender::LaneView> views;
  for (const auto& v : machine_->lanes()) views[v.id] = v;
  for (size_t i = 0; i < s.lane_count(); ++i) {
    const auto id = static_cast<core::LaneId>(i);
    const LaneNo no = machine_->sched_lane(id).value_or(0);
    const auto& st = s.stats(id);
    const auto& v = views[no];
    LaneReport l;
    l.lane_id = no;
    l.kind = session::lane_kind_name(v.traits.kind);
    l.bytes = st.useful_bytes.count();
    l.acked_bytes = st.acked_bytes.count();
    if (DataLane* lane = lane_locked(no)) {
      l.local = lane->local();
      l.remote = lane->remote();
      l.interface = lane->interface();
      const DataLaneCounters c = lane->counters(), c0 = t.at_start.count(no) ? t.at_start[no] : DataLaneCounters{};
      l.wire_bytes = c.wire_bytes - c0.wire_bytes;
      l.rejected_frames = c.rejected_frames - c0.rejected_frames;
      r.compressed_file_bytes += c.packed_file_bytes - c0.packed_file_bytes;
      r.compressed_wire_bytes += c.packed_wire_bytes - c0.packed_wire_bytes;
      lane->add_to_report(l);
    } else {
      l.local = v.path.local;
      l.remote = v.path.remote;
    }
    l.leaves_by = !l.interface.empty() ? l.interface : v.path.interface;
    l.name = "lane" + std::to_string(no) + (l.kind == "udp" ? " udp " : " ") + l.local + "->" + l.remote;
    l.chunks = st.pieces;
    l.share = static_cast<double>(l.bytes) / total;
    const auto fs = t.first_send.find(no);
    // A duplicate's ack may come after every piece was acked: the lane was
    // not working for the transfer then (and the transfer's own time ends there).
    const Time all_acked = machine_->all_acked_at();
    const Time last_ack = all_acked != Time::never() ? std::min(st.last_ack, all_acked) : st.last_ack;
    if (fs != t.first_send.end() && st.acked_bytes.count() > 0 && last_ack > fs->second) {
      l.active_seconds = (last_ack - fs->second).to_seconds();
      l.rate_bytes_per_sec = st.acked_bytes.as_double() / l.active_seconds;
    }
    l.estimate_bytes_per_sec = s.estimator(id).rate().bytes_per_second();
    l.rtt_ms = s.estimator(id).srtt().to_millis();
    l.stalls = st.stalls;
    l.duplicates = st.duplicates;
    l.abandoned = st.abandoned;
    l.open_at_end = v.open && s.lane_alive(id);
    l.close_reason = v.close_reason;
    r.lanes.push_back(l);
  }
  std::sort(r.lanes.begin(), r.lanes.end(), [](const LaneReport& a, const LaneReport& b) { return a.lane_id < b.lane_id; });
  return r;
}

}  // namespace braid::transfer
