// The receiver's file side of one transfer: what the pure session machine
// (core/session/receiver.hpp) asks the engine to do with the file system.
// PrepareOffer becomes prepare_offer() — check the offer against the target,
// open the resume journal, read back what an earlier run left and keep only
// what still matches its hash, ask the user; FinalizeTransfer and
// AbandonTransfer become the IncomingTransfer's finalize() and abandon().
//
// Threads: prepare_offer, finalize and abandon run on the session's control
// thread; write() and the resume calls on the lanes' threads (a transfer's
// pieces are disjoint ranges; ResumeRecorder is thread-safe).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "core/session/sync.hpp"
#include "engine/files/link_policy.hpp"
#include "engine/files/receive_tree.hpp"
#include "engine/files/sync_target.hpp"
#include "engine/files/transfer_key.hpp"
#include "engine/files/resume_recorder.hpp"
#include "engine/transfer/event_log.hpp"
#include "core/wire/messages.hpp"

namespace braid::transfer {

/// What the target disk does to each verified piece's write, in process
/// (tests only; never set by the command line): a delay (a disk slower than
/// the network) or an errno (a disk that fills up mid-transfer).
class DiskFaults {
 public:
  virtual ~DiskFaults() = default;
  /// Before `n` bytes are written at transfer offset `offset`: 0 to write
  /// them, or the errno the write fails with.
  virtual int before_write(uint64_t offset, size_t n) = 0;
  /// The target's free bytes as the offer's free-space checks see them;
  /// nullopt: what its file system says.
  virtual std::optional<uint64_t> free_bytes() { return std::nullopt; }
};

struct IncomingTransfer {
  /// Shared with the session machine and the receive tree (one copy of
  /// the entries on this end). Answered part by part (protocol 9): the
  /// offer's fields alone, its entries the tree's parts (counted by
  /// entry_count() and file_count()) — the lanes' threads read only
  /// `id`, `chunk_size`, `hash`.
  std::shared_ptr<const wire::Offer> offer;
  uint32_t id = 0;
  uint64_t chunk_size = 0;
  wire::HashAlgo hash = wire::HashAlgo::xxh3_128;
  void set_offer(std::shared_ptr<const wire::Offer> o) {
    id = o->transfer_id, chunk_size = o->chunk_size, hash = o->hash;
    offer = std::move(o);
  }
  /// Null for a discard offer (`braid probe`): pieces are verified and
  /// acked, nothing is written and no file is made.
  std::unique_ptr<files::ReceiveTree> tree;
  /// What an earlier run left (held ranges) and what this run adds, kept
  /// true on disk. Null for an empty transfer or when resume is off.
  std::unique_ptr<files::ResumeRecorder> resume;
  std::shared_ptr<DiskFaults> faults;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  // Resume: what the journal claimed, read back from disk at the offer.
  uint64_t reverified_bytes = 0;  // matched their hash: held, not sent again
  uint64_t refetched_bytes = 0;   // claimed but not on disk as claimed: sent again
  double resume_check_seconds = 0;
  // Sync (docs/engine.md, "Sync").
  /// A chunk of an older version of a file here whose hash the accept
  /// lists: if the sender keeps it, finalize copies it into the temporary
  /// file and checks it again.
  struct Reused {
    size_t entry = 0;
    uint64_t file_offset = 0;
    wire::HeldRange range;
  };
  std::vector<Reused> reused;
  /// older_here entries: what stood at their place at the offer.
  std::map<size_t, files::FoundFile> older;
  session::sync::Tally tally;
  std::vector<std::string> extraneous;  // --delete: removed once the files are in place
  uint64_t extraneous_found = 0;        // how many the offer found
  uint64_t deleted = 0;                 // entries removed (a directory's contents count each)
  std::vector<std::string> delete_errors;
  int root_fd = -1;  // the target (borrowed)
  /// Answered part by part: the key its journal is named by, hashed as the
  /// parts come (files::RunningKey: the entries need not stay for it), and
  /// its origin, from the first part (ResumeJournal::origin_of).
  std::unique_ptr<files::RunningKey> key_so_far;
  std::string origin;
  uint64_t part_hole_bytes = 0;  // the sparse files' holes so far (tally.hole_bytes once whole)
  /// Ended (put in place, failed or abandoned): bytes still arriving are dropped.
  std::atomic<bool> over{false};

  /// The transfer's bytes (so far, while its offer comes part by part); any thread.
  uint64_t total() const { return tree ? tree->total() : offer_total; }
  /// The entries and the files among them so far, whichever way the offer
  /// came (answered part by part, `offer` holds no entries: the tree's parts do).
  size_t entry_count() const { return tree ? tree->entry_count() : offer->entries.size(); }
  size_t file_count() const;
  uint64_t offer_total = 0;  // without a tree (a probe)
  /// Before bytes are written over [offset, offset+length): a range held
  /// from an earlier run there loses its claim durably first. Empty: write;
  /// else why not.
  std::string may_write(uint64_t offset, uint64_t length);
  /// A verified piece's bytes to disk: 0, or the errno.
  int write(uint64_t offset, std::span<const uint8_t> bytes);
  /// Every byte verified and the root hash right: the reused chunks that
  /// still count (`held`, from the machine) copied in and checked, a last
  /// commit, the files in place, the journal gone, then --delete. Empty on
  /// success, else why (and `err`).
  std::string finalize(int& err, const std::vector<wire::HeldRange>& held = {});
  /// Failed or its session ended: the temporary files and the journal of
  /// what in them is verified stay for a later run — unless the root hash
  /// disagreed (which piece is wrong is unknown: nothing is kept).
  void abandon(std::optional<wire::ResultStatus> status);

 private:
  std::string put_reused(int& err, const std::vector<wire::HeldRange>& held);
};

struct OfferContext {
  int root_fd = -1;
  std::string peer;
  std::vector<uint8_t> peer_key;
  files::LinkPolicy links = files::LinkPolicy::safe;
  EventLog* log = nullptr;
  std::function<void(const std::string&)> note;
  /// Accept or not (the user's answer, or --yes).
  std::function<bool(const wire::Offer&)> ask;
  /// Set when the session is interrupted: waits and read-backs stop.
  const std::atomic<bool>* interrupted = nullptr;
  std::shared_ptr<DiskFaults> faults;
};

struct PreparedOffer {
  std::shared_ptr<IncomingTransfer> transfer;
  wire::Accept accept;
};

/// The engine's answer to the machine's PrepareOffer: screen_offer, then
/// ctx.ask, then prepare_accepted_offer.
std::variant<PreparedOffer, wire::Refuse> prepare_offer(const OfferContext& ctx, const std::shared_ptr<const wire::Offer>& offer);
/// What needs nobody's decision: an offer the receiver cannot take in any
/// case (its chunk size) is refused; else the offer is logged, nullopt.
std::optional<wire::Refuse> screen_offer(const OfferContext& ctx, const wire::Offer& offer);
/// The offer is accepted (asked, or decided elsewhere): the target checked,
/// the resume journal opened and read back.
std::variant<PreparedOffer, wire::Refuse> prepare_accepted_offer(const OfferContext& ctx,
                                                                 const std::shared_ptr<const wire::Offer>& offer);
// ---- protocol 9: an offer answered part by part (session::PrepareOfferPart) ----

/// Why the first part of an offer is not answered early but the whole
/// offer after its last part, as in protocol 8 (empty: it is answered part
/// by part): it needs a person's yes, it is a probe, a sync or a dry run,
/// or an earlier run of the same origin (sender, hash, chunk size, first
/// entry: files::ResumeJournal::origin_of) left a resume journal in the
/// target (its key needs the whole offer to tell whether it is this
/// transfer's). Journals of other senders and trees do not hold it back.
/// `first`: the first part's entries (the head has none).
std::string why_not_early(const OfferContext& ctx, const wire::Offer& head, std::span<const wire::ManifestEntry> first,
                          bool asks_someone);
/// The first part's head: the transfer, its tree empty, its temporary files
/// named by a tag of its own; its pieces are recorded for resume once its
/// journal opens (finish_offer_parts).
std::variant<std::shared_ptr<IncomingTransfer>, wire::Refuse> begin_offer_parts(const OfferContext& ctx,
                                                                                const wire::Offer& head);
/// Entries [first, first + entries.size()) checked and made room for; a refusal if not.
std::optional<wire::Refuse> add_offer_part(const OfferContext& ctx, IncomingTransfer& t, size_t first,
                                           std::vector<wire::EntryParts::Part> parts);
/// The last part is in: the links decided, the resume journal opened under
/// the whole offer's key (`fields` and the tree's parts; naming the tree's
/// tag). The closing accept, or a refusal.
std::variant<wire::Accept, wire::Refuse> finish_offer_parts(const OfferContext& ctx, IncomingTransfer& t,
                                                            const std::shared_ptr<const wire::Offer>& fields);

/// A refusal, logged and noted.
wire::Refuse refuse_offer(const OfferContext& ctx, uint32_t id, wire::RefuseReason reason, const std::string& message);
/// The offer's first `most` top-level names, printable (prompts, the offers list).
std::vector<std::string> offer_names(const wire::Offer& offer, size_t most);

/// What a user types or sees in an accept prompt on a terminal; false when
/// there is no terminal.
bool ask_on_terminal(const std::string& peer, const wire::Offer& offer);

}  // namespace braid::transfer
