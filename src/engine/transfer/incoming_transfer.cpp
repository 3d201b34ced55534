#include "engine/transfer/incoming_transfer.hpp"

#include <unistd.h>

#include <cstring>
#include <iostream>

#include "core/chunk_plan.hpp"
#include "core/units_parse.hpp"
#include "engine/files/held_verify.hpp"
#include "engine/files/transfer_key.hpp"
#include "engine/security/safe_path.h"

namespace braid::transfer {

namespace {

// How long an offer waits for the resume journal of its transfer while
// another session holds it (files::ResumeJournal::open) before it is refused
// as busy: a session of this transfer that is ending (its sender just died)
// lets go at its last commit.
constexpr std::chrono::milliseconds kJournalLockWait{5000};

// The ranges a journal claims, at most as many as one accept can list (the
// rest is sent again). None of them counts yet: each is read back from disk
// and hashed first (files::verify_held).
files::HeldRanges claimable(const files::HeldRanges& loaded) {
  files::HeldRanges out;
  for (const auto& r : loaded.records()) {
    if (out.size() >= wire::kMaxHeldRanges) break;
    out.add(r);
  }
  return out;
}

}  // namespace

std::string IncomingTransfer::may_write(uint64_t offset, uint64_t length) {
  if (!resume || resume->before_write(offset, length)) return {};
  const std::string why = resume->error();
  return "cannot write over a range kept from an earlier run: the resume journal cannot record it" +
         (why.empty() ? std::string() : " (" + why + ")");
}

int IncomingTransfer::write(uint64_t offset, std::span<const uint8_t> bytes) {
  if (!tree) return 0;  // discard: verified is all a probe's bytes need
  if (faults)
    if (const int err = faults->before_write(offset, bytes.size()); err != 0) return err;
  return tree->write(offset, bytes);
}

std::string IncomingTransfer::finalize(int& err) {
  // A last commit first: should putting the files in place fail, the next
  // run resumes everything that arrived.
  if (resume) resume->halt();
  const std::string failure = tree ? tree->finalize(err) : std::string();
  if (failure.empty() && resume) resume->complete();  // every file is in place: nothing left to resume
  if (failure.empty()) over = true;
  return failure;
}

void IncomingTransfer::abandon(std::optional<wire::ResultStatus> status) {
  over = true;
  if (!resume) return;
  if (status == wire::ResultStatus::root_mismatch) resume->discard("the root hash did not match");
  else resume->stop();
}

bool ask_on_terminal(const std::string& peer, const wire::Offer& offer) {
  if (!::isatty(STDIN_FILENO)) return false;
  std::cerr << "braid: '" << peer << "' offers " << offer.entries.size()
            << (offer.entries.size() == 1 ? " entry, " : " entries, ")
            << format_size(Bytes(offer.total_bytes())) << ":";
  for (const auto& name : offer_names(offer, 5)) std::cerr << " " << name;
  std::cerr << "\nbraid: accept? [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return !answer.empty() && (answer[0] == 'y' || answer[0] == 'Y');
}

wire::Refuse refuse_offer(const OfferContext& ctx, uint32_t id, wire::RefuseReason reason, const std::string& message) {
  ctx.log->write("offer_refused", {{"transfer", id}, {"reason", wire::refuse_reason_name(reason)},
                                   {"message", json_safe(message)}});
  ctx.note("refused an offer from '" + ctx.peer + "': " + message);
  return wire::Refuse{id, reason, message};
}

std::optional<wire::Refuse> screen_offer(const OfferContext& ctx, const wire::Offer& offer) {
  const uint32_t id = offer.transfer_id;
  // The chunk size bounds each piece's receive buffer (one per lane).
  if (offer.chunk_size < core::ChunkPlan::kMinChunk.count() || offer.chunk_size > core::ChunkPlan::kMaxChunk.count())
    return refuse_offer(ctx, id, wire::RefuseReason::bad_offer,
                        "the offer's chunk size " + std::to_string(offer.chunk_size) + " is outside " +
                            std::to_string(core::ChunkPlan::kMinChunk.count()) + ".." +
                            std::to_string(core::ChunkPlan::kMaxChunk.count()) + " bytes");
  ctx.log->write("offer", {{"transfer", id}, {"entries", offer.entries.size()}, {"bytes", offer.total_bytes()},
                           {"peer", ctx.peer}, {"discard", offer.discard}});
  return std::nullopt;
}

std::vector<std::string> offer_names(const wire::Offer& offer, size_t most) {
  std::vector<std::string> out;
  for (const auto& e : offer.entries) {
    if (out.size() == most) break;
    if (e.path.find('/') == std::string::npos) out.push_back(security::printable_path(e.path));
  }
  return out;
}

std::variant<PreparedOffer, wire::Refuse> prepare_offer(const OfferContext& ctx, const wire::Offer& offer) {
  if (auto refused = screen_offer(ctx, offer)) return *refused;
  if (!offer.discard && !ctx.ask(offer))
    return refuse_offer(ctx, offer.transfer_id, wire::RefuseReason::declined,
                        ::isatty(STDIN_FILENO)
                            ? "declined"
                            : "declined (the receiver has no terminal to ask and was not started with --yes)");
  return prepare_accepted_offer(ctx, offer);
}

std::variant<PreparedOffer, wire::Refuse> prepare_accepted_offer(const OfferContext& ctx, const wire::Offer& offer) {
  EventLog& log = *ctx.log;
  const uint32_t id = offer.transfer_id;
  auto refuse = [&](wire::RefuseReason reason, const std::string& message) {
    return refuse_offer(ctx, id, reason, message);
  };
  if (offer.discard) {
    // `braid probe` from a peer that authenticated: its bytes are hashed and
    // dropped, so it costs this host bandwidth and CPU only, never disk; no
    // question asked, as a ping is not.
    auto t = std::make_shared<IncomingTransfer>();
    t->offer = offer;
    return PreparedOffer{std::move(t), wire::Accept{id, {}}};
  }
  // Resume: the journal of an earlier run of this very offer from this very
  // sender (the key says which), if there is one.
  const files::TransferKey key = files::transfer_key(offer, ctx.peer_key);
  std::unique_ptr<files::ResumeJournal> journal;
  if (offer.total_bytes() > 0) {
    auto opened = files::ResumeJournal::open(
        ctx.root_fd, files::JournalParams{key, offer.hash, offer.chunk_size, offer.total_bytes()}, kJournalLockWait,
        ctx.interrupted);
    if (auto* e = std::get_if<files::JournalError>(&opened)) {
      if (e->busy) return refuse(wire::RefuseReason::busy, e->message);
      log.write("resume_off", {{"transfer", id}, {"reason", json_safe(e->message)}});
    } else {
      journal = std::move(std::get<0>(opened));
    }
  }
  const files::HeldRanges loaded = journal ? journal->loaded() : files::HeldRanges();
  auto prepared = files::ReceiveTree::prepare(ctx.root_fd, offer,
                                              files::PrepareOptions{key.tag(), !loaded.empty(), loaded.bytes(), ctx.links});
  if (auto* err = std::get_if<files::PrepareError>(&prepared)) {
    if (journal && loaded.empty()) (void)journal->remove();  // nothing to resume: leave nothing behind
    return refuse(err->reason, err->message);
  }
  auto t = std::make_shared<IncomingTransfer>();
  t->offer = offer;
  t->tree = std::move(std::get<0>(prepared));
  t->faults = ctx.faults;
  wire::Accept accept{id, {}};
  for (const auto& l : t->tree->skipped_links()) {
    log.write("link_skipped", {{"transfer", id}, {"path", json_safe(l.path)}, {"target", json_safe(l.target)},
                               {"reason", l.reason}});
    ctx.note("not creating the link '" + security::printable_path(l.path) + "' -> '" +
             security::printable_path(l.target) + "': " + l.reason + " (--links " + files::link_policy_name(ctx.links) +
             ")");
  }
  if (!journal) return PreparedOffer{std::move(t), std::move(accept)};
  const files::HeldRanges claimed = claimable(loaded);
  if (!loaded.empty()) {
    // A temporary file another size than its file: cut, extended or gone
    // since the earlier run. Made the right size again; what of it still
    // matches is kept like the rest, after the read-back below.
    for (size_t i = 0; i < t->offer.entries.size(); ++i) {
      const auto& e = t->offer.entries[i];
      const int64_t found = t->tree->part_size_found(i);
      if (e.kind != wire::EntryKind::file || found == static_cast<int64_t>(e.size)) continue;
      log.write("resume_part_resized", {{"transfer", id}, {"entry", i}, {"found", found}, {"size", e.size}});
      ctx.note("resume: '" + security::printable_path(t->tree->temp_path(i)) + "' " +
               (found < 0 ? "was missing" : "had " + std::to_string(found) + " bytes") + ", its file has " +
               std::to_string(e.size) + ": its held bytes are checked on disk, what differs is fetched again");
    }
  }
  // Nothing held counts before it is read back and matches its hash.
  files::HeldVerifyResult v = files::verify_held(*t->tree, claimed, t->offer.hash, {0, ctx.interrupted});
  if (v.cancelled)  // the journal is left as it was (its claims unchecked, not dropped): the next run checks them
    return wire::Refuse{id, wire::RefuseReason::busy, "the receiver was interrupted"};
  files::HeldRanges held = std::move(v.verified);
  t->reverified_bytes = held.bytes();
  t->refetched_bytes = loaded.bytes() - held.bytes();
  t->resume_check_seconds = v.seconds;
  for (const auto& f : v.failed) log.write("resume_mismatch", {{"transfer", id}, {"offset", f.offset}, {"length", f.length}});
  if (!v.failed.empty())
    ctx.note("resume: " + std::to_string(v.failed_bytes) + " bytes held from an earlier run (" +
             std::to_string(v.failed.size()) + " ranges) differ from what was verified then: fetched again");
  // The journal now says exactly what the accept says: nothing the sender
  // is not told about can stay claimed — a range that failed the read-back
  // loses its claim here, durably, before anything is written over it.
  if (const int err = journal->rewrite(held.records()); err != 0) {
    log.write("resume_off",
              {{"transfer", id}, {"reason", std::string("cannot rewrite the resume journal: ") + std::strerror(err)}});
    held = files::HeldRanges();
    (void)journal->remove();
  }
  for (const auto& r : held.records()) accept.held.push_back(wire::HeldRange{r.offset, r.length, r.hash});
  if (!loaded.empty())
    log.write("resume", {{"transfer", id}, {"held_ranges", held.size()}, {"held_bytes", held.bytes()},
                         {"dropped_ranges", loaded.size() - held.size()},
                         {"journal_records_dropped", journal->dropped_records()},
                         {"reverified_bytes", t->reverified_bytes}, {"refetched_bytes", t->refetched_bytes},
                         {"mismatched_ranges", v.failed.size()}, {"check_seconds", v.seconds}});
  t->resume = std::make_unique<files::ResumeRecorder>(std::move(journal), *t->tree, std::move(held));
  return PreparedOffer{std::move(t), std::move(accept)};
}

}  // namespace braid::transfer
