#include "engine/transfer/incoming_transfer.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <random>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <set>

#include "core/chunk_plan.hpp"
#include "core/units_parse.hpp"
#include "core/wire/protocol_needs.hpp"
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

// The ranges a sync may reuse from the older versions of files here: the
// chunks both versions have, each hashed from the receiver's own disk (one
// file open at a time, 1 MiB read at a time), less the ranges the journal
// holds already. False if interrupted.
bool hash_reusable(IncomingTransfer& t, const std::vector<wire::FileDecision>& files, const files::HeldRanges& held,
                   const std::atomic<bool>* interrupted) {
  const auto starts = session::sync::entry_offsets(*t.offer);
  std::vector<uint8_t> buf;
  for (const auto& f : files) {
    if (f.verdict != wire::FileVerdict::older_here) continue;
    const auto& e = t.offer->entries[f.entry];
    const uint64_t old_size = t.older[f.entry].size;
    if (old_size == 0 || e.size == 0) continue;
    security::UniqueFd fd = t.tree->open_existing(f.entry);
    if (!fd.valid()) continue;
    for (const auto& span :
         session::sync::reusable_spans(starts[f.entry], e.size, old_size, t.offer->chunk_size, e.data)) {
      if (interrupted && interrupted->load()) return false;
      if (held.overlaps(span.offset, span.length)) continue;  // this run's journal has newer bytes there
      files::PieceHasher h(t.offer->hash);
      buf.resize(std::min<uint64_t>(span.length, 1 << 20));
      const uint64_t file_offset = span.offset - starts[f.entry];
      bool ok = true;
      for (uint64_t done = 0; done < span.length && ok;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), span.length - done));
        const ssize_t r = ::pread(fd.get(), buf.data(), n, static_cast<off_t>(file_offset + done));
        if (r <= 0) {
          ok = r < 0 && errno == EINTR;
          continue;
        }
        h.update(std::span<const uint8_t>(buf.data(), static_cast<size_t>(r)));
        done += static_cast<uint64_t>(r);
      }
      if (!ok) break;  // cut meanwhile: what is left of it is sent
      t.reused.push_back({f.entry, file_offset, wire::HeldRange{span.offset, span.length, h.finish()}});
    }
  }
  return true;
}

/// The target's free bytes as a test's disk says (DiskFaults); nullopt: the file system's.
std::optional<uint64_t> free_bytes(const OfferContext& ctx) { return ctx.faults ? ctx.faults->free_bytes() : std::nullopt; }

}  // namespace

size_t IncomingTransfer::file_count() const {
  if (tree) return tree->file_count();
  size_t n = 0;
  for (const auto& e : offer->entries) n += e.kind == wire::EntryKind::file;
  return n;
}

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

std::string IncomingTransfer::finalize(int& err, const std::vector<wire::HeldRange>& held) {
  if (!reused.empty()) {
    if (std::string failure = put_reused(err, held); !failure.empty()) return failure;
  }
  // --delete: the transfer verified, so what the source no longer has goes
  // now — before the directories get their mtimes, which it changes.
  // With a backup it is moved to its backup name instead (one rename each).
  const files::BackupOptions backup = files::backup_options(offer->sync);
  for (const auto& path : extraneous) {
    std::string e = backup.on() ? files::move_to_backup(root_fd, backup, path, deleted)
                                : files::remove_tree_beneath(root_fd, path, deleted);
    if (!e.empty()) delete_errors.push_back(e);
  }
  extraneous.clear();  // a finalize tried again removes nothing twice
  // A last commit first: should putting the files in place fail, the next
  // run resumes everything that arrived.
  if (resume) resume->halt();
  const std::string failure = tree ? tree->finalize(err) : std::string();
  if (failure.empty() && resume) resume->complete();  // every file is in place: nothing left to resume
  if (failure.empty()) over = true;
  return failure;
}

std::string IncomingTransfer::put_reused(int& err, const std::vector<wire::HeldRange>& held) {
  // Which reused chunks still count: the sender kept them (no piece came over them).
  std::set<std::pair<uint64_t, uint64_t>> counted;
  for (const auto& h : held)
    if (h.hash.size) counted.insert({h.offset, h.length});
  std::map<size_t, uint64_t> covered;  // entry -> bytes of it that come from its older version
  for (const auto& r : reused)
    if (counted.count({r.range.offset, r.range.length})) covered[r.entry] += r.range.length;
  std::vector<uint8_t> buf;
  std::set<size_t> kept_whole;
  for (const auto& r : reused) {
    if (!counted.count({r.range.offset, r.range.length})) continue;
    const auto& e = offer->entries[r.entry];
    const files::FoundFile& was = older[r.entry];
    const files::FoundFile now = files::stat_beneath(root_fd, e.path);
    if (now.kind != was.kind || now.size != was.size || now.mtime_sec != was.mtime_sec ||
        now.mtime_nsec != was.mtime_nsec) {
      err = ESTALE;
      return "'" + security::printable_path(e.path) +
             "' changed on the receiver while it was synced: run the same command again";
    }
    if (covered[r.entry] == e.size && was.size == e.size) {
      // Every chunk matched: the file here is the one sent. It stays; only
      // its mode and mtime change (no copy, no rename).
      if (kept_whole.insert(r.entry).second) {
        tree->keep_existing(r.entry);
        --tally.files_updated;  // nothing of it was sent after all
        ++tally.files_unchanged;
      }
      continue;
    }
    if (int e2 = tree->copy_from_existing(r.entry, r.file_offset, r.range.length); e2 != 0) {
      err = e2;
      return "copying the unchanged part of '" + security::printable_path(e.path) + "': " + std::strerror(e2);
    }
    // Verified like every piece: read back from the temporary file and hashed.
    buf.resize(r.range.length);
    if (int e3 = tree->read(r.range.offset, buf); e3 != 0) {
      err = e3;
      return "reading back '" + security::printable_path(tree->temp_path(r.entry)) + "': " + std::strerror(e3);
    }
    files::PieceHasher h(offer->hash);
    h.update(buf);
    if (!(h.finish() == r.range.hash)) {
      err = ESTALE;
      return "'" + security::printable_path(e.path) +
             "' changed on the receiver while it was synced: run the same command again";
    }
  }
  return {};
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

std::variant<PreparedOffer, wire::Refuse> prepare_offer(const OfferContext& ctx,
                                                        const std::shared_ptr<const wire::Offer>& shared) {
  const wire::Offer& offer = *shared;
  if (auto refused = screen_offer(ctx, offer)) return *refused;
  if (!offer.discard && !ctx.ask(offer))
    return refuse_offer(ctx, offer.transfer_id, wire::RefuseReason::declined,
                        ::isatty(STDIN_FILENO)
                            ? "declined"
                            : "declined (the receiver has no terminal to ask and was not started with --yes)");
  return prepare_accepted_offer(ctx, shared);
}

std::variant<PreparedOffer, wire::Refuse> prepare_accepted_offer(const OfferContext& ctx,
                                                                 const std::shared_ptr<const wire::Offer>& shared) {
  const wire::Offer& offer = *shared;
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
    t->set_offer(shared);
    t->offer_total = offer.total_bytes();
    return PreparedOffer{std::move(t), wire::Accept{id, {}}};
  }
  // Backups (--backup-suffix, --backup-dir): a directory of this target,
  // which the offer must not write into.
  const files::BackupOptions backup = files::backup_options(offer.sync);
  if (backup.on()) {
    if (std::string bad = files::check_backup_options(backup); !bad.empty()) return refuse(wire::RefuseReason::bad_path, bad);
    if (!backup.dir.empty())
      for (const auto& e : offer.entries)
        if (e.path == backup.dir || e.path.rfind(backup.dir + "/", 0) == 0)
          return refuse(wire::RefuseReason::bad_path, "the offer names '" + security::printable_path(e.path) +
                                                          "', inside the backup directory '" +
                                                          security::printable_path(backup.dir) + "'");
  }
  // Sync: what stands at each file's place here decides what is sent.
  std::vector<wire::FileDecision> decisions;
  std::map<size_t, files::FoundFile> older;
  std::vector<bool> keep(offer.entries.size(), false);
  std::vector<bool> refresh(offer.entries.size(), false);
  std::vector<uint32_t> kept_ids;
  std::vector<std::string> extraneous;
  if (offer.sync.sync) {
    files::TargetStat target(ctx.root_fd);
    for (size_t i = 0; i < offer.entries.size(); ++i) {
      const auto& e = offer.entries[i];
      if (e.kind != wire::EntryKind::file) continue;
      const files::FoundFile found = target.at(e.path);
      session::sync::Existing there;
      there.kind = found.kind == 0   ? session::sync::Existing::Kind::none
                   : found.kind == 1 ? session::sync::Existing::Kind::file
                                     : session::sync::Existing::Kind::other;
      there.size = found.size;
      there.mtime_sec = found.mtime_sec;
      there.mtime_nsec = found.mtime_nsec;
      const auto verdict = session::sync::decide(e, there, offer.sync);
      if (!verdict) continue;
      decisions.push_back({static_cast<uint32_t>(i), *verdict});
      if (session::sync::keeps(*verdict)) {
        keep[i] = true;
        refresh[i] = *verdict == wire::FileVerdict::unchanged;
        kept_ids.push_back(static_cast<uint32_t>(i));
      } else {
        older[i] = found;
      }
    }
    if (offer.sync.delete_extraneous) extraneous = files::find_extraneous(ctx.root_fd, offer);
  }
  // More verdicts than one accept lists go ahead of it (protocol 11), only
  // to a sender that said it takes them so: an older one is refused here,
  // before anything is made for the transfer.
  if (decisions.size() > wire::kMaxManifestEntries && !offer.verdicts_apart)
    return refuse(wire::RefuseReason::bad_offer, wire::too_many_verdicts(decisions.size(), wire::kMaxManifestEntries));
  const session::sync::Tally tally = session::sync::tally(offer, decisions);
  auto with_sync = [&](wire::Accept a) {
    a.files = decisions;
    a.extraneous_count = static_cast<uint32_t>(std::min<size_t>(extraneous.size(), UINT32_MAX));
    for (size_t i = 0; i < extraneous.size() && i < wire::kMaxListedExtraneous; ++i) a.extraneous.push_back(extraneous[i]);
    return a;
  };
  if (offer.sync.sync)
    log.write("sync", {{"transfer", id}, {"files_sent", tally.files_sent}, {"files_unchanged", tally.files_unchanged},
                       {"files_skipped", tally.files_skipped}, {"files_updated", tally.files_updated},
                       {"kept_bytes", tally.kept_bytes}, {"extraneous", extraneous.size()},
                       {"dry_run", offer.sync.dry_run}});
  if (offer.sync.dry_run) {
    // Decided and told; nothing made, nothing removed.
    for (const auto& x : extraneous)
      ctx.note("dry run: would " + std::string(backup.on() ? "move to its backup" : "delete") + " '" +
               security::printable_path(x) + "'");
    return PreparedOffer{nullptr, with_sync(wire::Accept{id, {}})};
  }
  // Resume: the journal of an earlier run of this very offer from this very
  // sender (the key says which), if there is one.
  const files::TransferKey key = files::ResumeJournal::key_for(ctx.root_fd, offer, ctx.peer_key, kept_ids);
  std::unique_ptr<files::ResumeJournal> journal;
  if (offer.total_bytes() > tally.kept_bytes) {  // something will be written: worth a journal
    auto opened = files::ResumeJournal::open(
        ctx.root_fd,
        files::JournalParams{key, offer.hash, offer.chunk_size, offer.total_bytes(), {},
                             files::ResumeJournal::origin_of(offer, offer.entries, ctx.peer_key)},
        kJournalLockWait, ctx.interrupted);
    if (auto* e = std::get_if<files::JournalError>(&opened)) {
      if (e->busy) return refuse(wire::RefuseReason::busy, e->message);
      log.write("resume_off", {{"transfer", id}, {"reason", json_safe(e->message)}});
    } else {
      journal = std::move(std::get<0>(opened));
    }
  }
  const files::HeldRanges loaded = journal ? journal->loaded() : files::HeldRanges();
  // An earlier run answered part by part named its temporary files by a
  // tag of its own, which its journal names.
  const std::string tag = journal && !loaded.empty() ? journal->parts_tag() : key.tag();
  auto prepared = files::ReceiveTree::prepare(
      ctx.root_fd, shared,
      files::PrepareOptions{tag, !loaded.empty(), loaded.bytes() + tally.kept_bytes, ctx.links, keep, refresh,
                            backup, free_bytes(ctx)});
  if (auto* err = std::get_if<files::PrepareError>(&prepared)) {
    if (journal && loaded.empty()) (void)journal->remove();  // nothing to resume: leave nothing behind
    return refuse(err->reason, err->message);
  }
  auto t = std::make_shared<IncomingTransfer>();
  t->set_offer(shared);
  t->tree = std::move(std::get<0>(prepared));
  t->faults = ctx.faults;
  t->root_fd = ctx.root_fd;
  t->older = std::move(older);
  t->tally = tally;
  wire::Accept accept = with_sync(wire::Accept{id, {}});
  t->extraneous_found = extraneous.size();
  t->extraneous = std::move(extraneous);
  // The chunks of older versions here join the held ranges (after the
  // journal's, which they never overlap); the sender checks them all alike.
  auto add_reused = [&](const files::HeldRanges& held) -> bool {
    if (decisions.empty()) return true;
    const auto began = std::chrono::steady_clock::now();
    if (!hash_reusable(*t, decisions, held, ctx.interrupted)) return false;
    uint64_t bytes = 0;
    for (const auto& r : t->reused)
      if (accept.held.size() < wire::kMaxHeldRanges) accept.held.push_back(r.range), bytes += r.range.length;
    std::sort(accept.held.begin(), accept.held.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
    log.write("sync_hashed", {{"transfer", id}, {"ranges", t->reused.size()}, {"bytes", bytes},
                              {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()}});
    return true;
  };
  for (const auto& l : t->tree->skipped_links()) {
    log.write("link_skipped", {{"transfer", id}, {"path", json_safe(l.path)}, {"target", json_safe(l.target)},
                               {"reason", l.reason}});
    ctx.note("not creating the link '" + security::printable_path(l.path) + "' -> '" +
             security::printable_path(l.target) + "': " + l.reason + " (--links " + files::link_policy_name(ctx.links) +
             ")");
  }
  if (!journal) {
    if (!add_reused(files::HeldRanges())) return wire::Refuse{id, wire::RefuseReason::busy, "the receiver was interrupted"};
    return PreparedOffer{std::move(t), std::move(accept)};
  }
  const files::HeldRanges claimed = claimable(loaded);
  if (!loaded.empty()) {
    // A temporary file another size than its file: cut, extended or gone
    // since the earlier run. Made the right size again; what of it still
    // matches is kept like the rest, after the read-back below.
    for (size_t i = 0; i < t->offer->entries.size(); ++i) {
      const auto& e = t->offer->entries[i];
      const int64_t found = t->tree->part_size_found(i);
      if (e.kind != wire::EntryKind::file || found == static_cast<int64_t>(e.size)) continue;
      log.write("resume_part_resized", {{"transfer", id}, {"entry", i}, {"found", found}, {"size", e.size}});
      ctx.note("resume: '" + security::printable_path(t->tree->temp_path(i)) + "' " +
               (found < 0 ? "was missing" : "had " + std::to_string(found) + " bytes") + ", its file has " +
               std::to_string(e.size) + ": its held bytes are checked on disk, what differs is fetched again");
    }
  }
  // Nothing held counts before it is read back and matches its hash.
  files::HeldVerifyResult v = files::verify_held(*t->tree, claimed, t->offer->hash, {0, ctx.interrupted});
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
  if (!add_reused(held)) return wire::Refuse{id, wire::RefuseReason::busy, "the receiver was interrupted"};
  t->resume = std::make_unique<files::ResumeRecorder>(std::move(journal), *t->tree, std::move(held));
  return PreparedOffer{std::move(t), std::move(accept)};
}

}  // namespace braid::transfer

namespace braid::transfer {

namespace {

// A resume journal of any transfer in the target (".braid-resume-<tag>").
// Whether a journal in the target may be an earlier run of the transfer
// of `origins` (ResumeJournal::origin_of): one that records one of them, or
// none (written before journals recorded it), or one that cannot be read.
bool journal_of_origin_in(int root_fd, std::initializer_list<std::string> origins) {
  const int fd = ::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return true;  // cannot tell: as if there were one
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return true;
  }
  bool found = false;
  while (const dirent* e = ::readdir(d))
    if (files::ResumeJournal::is_journal_name(e->d_name)) {
      const auto recorded = files::ResumeJournal::read_origin(::dirfd(d), e->d_name);
      if (!recorded || std::find(origins.begin(), origins.end(), *recorded) != origins.end()) {
        found = true;
        break;
      }
    }
  ::closedir(d);
  return found;
}

// 16 hex digits no other transfer's files are named by.
std::string fresh_tag() {
  std::array<uint8_t, 8> r{};
  std::random_device rd;
  for (auto& b : r) b = static_cast<uint8_t>(rd());
  wire::Digest d;
  d.size = 8;
  std::copy(r.begin(), r.end(), d.bytes.begin());
  return d.hex();
}

}  // namespace

std::string why_not_early(const OfferContext& ctx, const wire::Offer& head, std::span<const wire::ManifestEntry> first,
                          bool asks_someone) {
  if (asks_someone) return "it waits for someone's yes";
  if (head.discard) return "a probe";
  if (head.sync != wire::SyncOptions{}) return "a sync";
  if (ctx.interrupted && ctx.interrupted->load()) return "interrupted";
  // A journal of another sender or of another tree cannot be this
  // transfer's: only one that may be makes the receiver wait for the whole
  // offer, whose key tells.
  // The first journals that recorded an origin left the first entry's
  // mtime out of it: theirs is matched too.
  if (journal_of_origin_in(ctx.root_fd, {files::ResumeJournal::origin_of(head, first, ctx.peer_key),
                                         files::ResumeJournal::origin_of(head, first, ctx.peer_key, false)}))
    return "an earlier run of this transfer may have left a resume journal here";
  return {};
}

std::variant<std::shared_ptr<IncomingTransfer>, wire::Refuse> begin_offer_parts(const OfferContext& ctx,
                                                                                const wire::Offer& head) {
  auto shared = std::make_shared<wire::Offer>(wire::offer_fields(head));
  auto tree = files::ReceiveTree::begin_parts(ctx.root_fd, *shared, files::PrepareOptions{fresh_tag(), false, 0, ctx.links, {}, {}, {}, free_bytes(ctx)});
  if (auto* err = std::get_if<files::PrepareError>(&tree)) return refuse_offer(ctx, head.transfer_id, err->reason, err->message);
  auto t = std::make_shared<IncomingTransfer>();
  t->set_offer(std::move(shared));
  t->tree = std::move(std::get<0>(tree));
  t->faults = ctx.faults;
  t->root_fd = ctx.root_fd;
  // Pieces verified before the journal opens wait in the recorder for it.
  t->resume = std::make_unique<files::ResumeRecorder>(*t->tree);
  t->key_so_far = std::make_unique<files::RunningKey>();
  return t;
}

std::optional<wire::Refuse> add_offer_part(const OfferContext& ctx, IncomingTransfer& t, size_t first,
                                           std::vector<wire::EntryParts::Part> parts) {
  size_t n = 0;
  for (auto& part : parts) {
    const size_t k = part ? part->size() : 0;
    if (k == 0) continue;
    if (first + n == 0) t.origin = files::ResumeJournal::origin_of(*t.offer, *part, ctx.peer_key);
    t.key_so_far->add(*part);
    t.part_hole_bytes += session::sync::hole_bytes(*part, {});
    if (auto err = t.tree->add_part(first + n, std::move(part))) return refuse_offer(ctx, t.id, err->reason, err->message);
    n += k;
  }
  ctx.log->write("offer_part_prepared", {{"transfer", t.id}, {"first", first}, {"entries", n}, {"bytes", t.tree->total()}});
  return std::nullopt;
}

std::variant<wire::Accept, wire::Refuse> finish_offer_parts(const OfferContext& ctx, IncomingTransfer& t,
                                                            const std::shared_ptr<const wire::Offer>& fields) {
  const uint32_t id = t.id;
  if (auto err = t.tree->close_parts(fields)) return refuse_offer(ctx, id, err->reason, err->message);
  for (const auto& l : t.tree->skipped_links()) {
    ctx.log->write("link_skipped", {{"transfer", id}, {"path", json_safe(l.path)}, {"target", json_safe(l.target)},
                                    {"reason", l.reason}});
    ctx.note("not creating the link '" + security::printable_path(l.path) + "' -> '" +
             security::printable_path(l.target) + "': " + l.reason + " (--links " + files::link_policy_name(ctx.links) +
             ")");
  }
  // The journal under the whole offer's key, naming the tree's own tag: a
  // later run of this offer finds both.
  std::unique_ptr<files::ResumeJournal> journal;
  if (t.tree->total() > 0) {
    const files::TransferKey key = t.key_so_far->finish(*fields, ctx.peer_key);
    auto opened = files::ResumeJournal::open(
        ctx.root_fd, files::JournalParams{key, fields->hash, fields->chunk_size, t.tree->total(), t.tree->tag(), t.origin},
        kJournalLockWait, ctx.interrupted);
    if (auto* e = std::get_if<files::JournalError>(&opened)) {
      if (e->busy) return refuse_offer(ctx, id, wire::RefuseReason::busy, e->message);
      ctx.log->write("resume_off", {{"transfer", id}, {"reason", json_safe(e->message)}});
    } else {
      journal = std::move(std::get<0>(opened));
      // Another run's claims name other files: none of them counts here.
      if (!journal->loaded().empty())
        if (const int err = journal->rewrite({}); err != 0) {
          ctx.log->write("resume_off", {{"transfer", id}, {"reason", std::string("cannot rewrite the resume journal: ") +
                                                                          std::strerror(err)}});
          (void)journal->remove();
          journal.reset();
        }
    }
  }
  t.resume->attach(std::move(journal));
  return wire::Accept{id, {}};
}

}  // namespace braid::transfer
