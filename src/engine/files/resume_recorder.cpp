#include "engine/files/resume_recorder.hpp"

#include <cstring>
#include <set>

namespace braid::files {

ResumeRecorder::ResumeRecorder(std::unique_ptr<ResumeJournal> journal, ReceiveTree& tree, HeldRanges held,
                               RecorderOptions opts)
    : journal_(std::move(journal)), tree_(tree), opts_(opts), held_(std::move(held)) {
  any_held_ = !held_.empty();
  thread_ = std::thread([this] { run(); });
}

ResumeRecorder::ResumeRecorder(ReceiveTree& tree, RecorderOptions opts)
    : tree_(tree), opts_(opts), awaiting_journal_(true) {
  thread_ = std::thread([this] { run(); });
}

void ResumeRecorder::attach(std::unique_ptr<ResumeJournal> journal) {
  std::lock_guard j(journal_mu_);
  if (!awaiting_journal_) return;
  awaiting_journal_ = false;
  journal_ = std::move(journal);
}

ResumeRecorder::~ResumeRecorder() { stop(); }

void ResumeRecorder::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, opts_.interval,
                 [&] { return stopping_ || (pending_bytes_ >= opts_.batch_bytes && !awaiting_journal_.load()); });
    if (stopping_) break;
    lock.unlock();
    commit();
    lock.lock();
  }
}

bool ResumeRecorder::give_up_locked(const std::string& why) {
  if (error_.empty()) error_ = why;
  return remove_locked();
}

bool ResumeRecorder::remove_locked() {
  if (journal_ && journal_->remove()) journal_deleted_ = true;
  return journal_deleted_;
}

bool ResumeRecorder::journal_gone_locked() const { return !journal_ || journal_->removed(); }

void ResumeRecorder::close_journal() {
  std::lock_guard j(journal_mu_);
  journal_.reset();  // releases its lock: the same transfer may be offered again
}

bool ResumeRecorder::before_write(uint64_t offset, uint64_t length) {
  if (!any_held_.load(std::memory_order_acquire)) return true;
  std::lock_guard lock(mu_);  // held: a second writer waits until the revocation is durable
  if (!held_.overlaps(offset, length)) return true;
  const std::vector<PieceRecord> gone = held_.remove_overlapping(offset, length);
  any_held_ = !held_.empty();
  std::lock_guard j(journal_mu_);
  if (journal_deleted_) return true;  // no journal on disk claims anything
  if (!journal_) return false;        // closed but kept: it still claims the range
  if (const int err = journal_->append_revoked(gone); err != 0)
    return give_up_locked(std::string("cannot record a revoked range: ") + std::strerror(err));
  return true;
}

void ResumeRecorder::verified(const PieceRecord& r) {
  std::lock_guard lock(mu_);
  if (stopping_) return;  // the transfer is over: only the next run could use it, and it resends the piece
  pending_.push_back(r);
  pending_bytes_ += r.length;
  if (pending_bytes_ >= opts_.batch_bytes) cv_.notify_all();
}

void ResumeRecorder::commit() {
  std::lock_guard one(commit_mu_);
  // No journal yet: the pieces wait where they are (swapping them out and
  // back every interval copied them all each time).
  if (awaiting_journal_) return;
  std::vector<PieceRecord> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(pending_);
    pending_bytes_ = 0;
  }
  if (batch.empty()) return;
  {
    std::unique_lock j(journal_mu_);
    if (awaiting_journal_) {
      // No journal yet: the batch waits for it (unless the transfer ended meanwhile).
      j.unlock();
      std::lock_guard lock(mu_);
      pending_.insert(pending_.begin(), batch.begin(), batch.end());
      for (const auto& r : batch) pending_bytes_ += r.length;
      return;
    }
    if (journal_gone_locked()) return;
  }
  // Every piece in the batch was written before it was reported, so one
  // fdatasync per file it touched (one syncfs for many, or for files the
  // tree let go) makes all of them durable.
  if (const int err = tree_.sync_pieces(batch); err != 0) {
    std::lock_guard j(journal_mu_);
    (void)give_up_locked(std::string("cannot make the received bytes durable: ") + std::strerror(err));
    return;
  }
  std::lock_guard j(journal_mu_);
  if (journal_gone_locked()) return;
  if (const int err = journal_->append_held(batch); err != 0) {
    (void)give_up_locked(std::string("cannot append to the resume journal: ") + std::strerror(err));
    return;
  }
  for (const auto& r : batch) committed_bytes_ += r.length;
}

void ResumeRecorder::halt_thread(bool keep_pending) {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (!keep_pending) {
      pending_.clear();
      pending_bytes_ = 0;
    }
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ResumeRecorder::halt() {
  halt_thread(true);
  commit();
}

void ResumeRecorder::stop() {
  halt();
  close_journal();
}

void ResumeRecorder::complete() {
  halt_thread(false);
  {
    std::lock_guard j(journal_mu_);
    (void)remove_locked();
  }
  close_journal();
}

void ResumeRecorder::discard(const std::string& why) {
  halt_thread(false);
  {
    std::lock_guard j(journal_mu_);
    (void)give_up_locked(why);
  }
  close_journal();
}

std::vector<PieceRecord> ResumeRecorder::held() const {
  std::lock_guard lock(mu_);
  return held_.records();
}

uint64_t ResumeRecorder::held_bytes() const {
  std::lock_guard lock(mu_);
  return held_.bytes();
}

uint64_t ResumeRecorder::claimed_bytes() const {
  const uint64_t held = held_bytes();
  std::lock_guard j(journal_mu_);
  return journal_deleted_ ? 0 : held + committed_bytes_;
}

std::string ResumeRecorder::error() const {
  std::lock_guard j(journal_mu_);
  return error_;
}

}  // namespace braid::files
