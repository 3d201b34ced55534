// Keeps one transfer's resume journal true while its pieces arrive.
//
// Lanes report each piece once it is written and verified (`verified`); a
// background thread commits them in batches — every `interval`, or sooner
// once `batch_bytes` are waiting: it fdatasyncs the temporary files the
// batch touched (one syncfs when they are many), then appends the batch's records to the journal (which
// fdatasyncs too). A piece is therefore claimed only once its bytes are on
// disk; a crash of the receiver loses at most the pieces of the batch in
// progress (about one interval of transfer).
//
// The ranges held from an earlier run (announced in the accept) stay
// claimed until bytes are about to be written over them (`before_write`):
// then their claim is revoked, durably, first. The sender sends such bytes
// only when it found that a held range no longer matches its source.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/files/held_ranges.hpp"
#include "engine/files/receive_tree.hpp"
#include "engine/files/resume_journal.hpp"

namespace braid::files {

struct RecorderOptions {
  std::chrono::milliseconds interval{1000};
  uint64_t batch_bytes = 128u << 20;
};

class ResumeRecorder {
 public:
  /// `tree` must outlive the recorder. `held`: the ranges the accept announced.
  ResumeRecorder(std::unique_ptr<ResumeJournal> journal, ReceiveTree& tree, HeldRanges held,
                 RecorderOptions opts = {});
  /// Without a journal yet (an offer answered part by part, protocol 9: its
  /// key, and so its journal, is known only with its last part): pieces
  /// verified meanwhile wait, and are committed once attach() gives it.
  ResumeRecorder(ReceiveTree& tree, RecorderOptions opts = {});
  /// The journal of a recorder made without one (nothing held in it); the
  /// pieces waiting are committed at the next commit.
  void attach(std::unique_ptr<ResumeJournal> journal);
  ~ResumeRecorder();  // stop()

  /// Call before writing [offset, offset+length): a held range there loses
  /// its claim durably first. false: the journal on disk would still claim
  /// it (it could not be written, nor deleted; or it was closed) — do not
  /// write.
  bool before_write(uint64_t offset, uint64_t length);
  /// The piece's bytes are written and verified: recorded once durable.
  void verified(const PieceRecord& r);
  /// Commits what is waiting, now (the caller's thread).
  void commit();
  /// Every piece is in; the files are about to be put in place: a last
  /// commit, and no more. The journal stays open for complete() (success)
  /// or stop() (failure).
  void halt();
  /// The transfer failed or its session ended: a last commit, then the
  /// thread stops and the journal is closed (its lock released); it stays
  /// on disk for the next run. Later calls record nothing.
  void stop();
  /// The transfer is complete and in place: the thread stops and the
  /// journal is deleted.
  void complete();
  /// The journal can no longer be trusted (e.g. the root hash did not
  /// match): it is deleted; the next run starts from scratch.
  void discard(const std::string& why);

  /// The held ranges still claimed (they belong in the root hash).
  std::vector<PieceRecord> held() const;
  uint64_t held_bytes() const;
  /// What the journal on disk claims now: the held ranges still standing
  /// plus this run's committed pieces (0 once the journal was given up) —
  /// what the next run can resume.
  uint64_t claimed_bytes() const;
  /// Why the journal was given up, if it was.
  std::string error() const;

 private:
  void run();
  void halt_thread(bool keep_pending);
  /// Deletes the journal (under journal_mu_); true if no journal is left on disk.
  bool give_up_locked(const std::string& why);
  bool remove_locked();
  bool journal_gone_locked() const;
  void close_journal();

  std::unique_ptr<ResumeJournal> journal_;  // null once closed
  ReceiveTree& tree_;
  RecorderOptions opts_;

  std::mutex commit_mu_;                // one commit at a time
  mutable std::mutex journal_mu_;       // journal_, error_ (after mu_ when both)
  std::string error_;
  bool journal_deleted_ = false;        // no journal on disk claims anything any more
  std::atomic<bool> awaiting_journal_{false};  // made without one: attach() gives it (set under journal_mu_)
  uint64_t committed_bytes_ = 0;        // this run's pieces appended to the journal
  mutable std::mutex mu_;               // what follows
  std::condition_variable cv_;
  HeldRanges held_;
  std::atomic<bool> any_held_{false};  // lanes skip the lock when nothing is held
  std::vector<PieceRecord> pending_;
  uint64_t pending_bytes_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace braid::files
