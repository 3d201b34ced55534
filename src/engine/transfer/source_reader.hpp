// The running transfer's files as one byte space (files::FileLayout), read
// by every lane's writer with pread through a shared cache of open fds.
//
// While the tree is still walked (a streamed offer answered part by part,
// protocol 9) pieces of the entries walked so far are read as later ones
// join: grow() appends the walk's batch to the tree and lays out its files
// under an exclusive lock; a read holds the shared lock to find and open
// each file (and to check one it read to its end), never across a pread,
// so the walk is not held up by the lanes.
//
// Its life ends with the transfer's send call, not with its last owner: the
// lanes hold it (shared_ptr) in work they may still be carrying out after
// send()/send_walking() returned, but the tree it reads is the caller's, free
// to go then. retire() closes that gap — new reads fail cleanly, the ones in
// flight are waited for, the fds are closed — and the session calls it on
// every way out of a transfer (run_transfer). Owning the tree instead would
// keep the caller's whole walk (and 512 fds) alive for as long as a lane
// holds a stale piece, and a streamed walk's tree is the caller's by contract.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <shared_mutex>
#include <vector>

#include "engine/files/fd_cache.hpp"
#include "engine/files/file_layout.hpp"
#include "engine/files/source_tree.hpp"
#include "engine/transfer/data_lane.hpp"

namespace braid::transfer {

/// What the source's disk does to the lanes' reads, in process (tests only;
/// never set by the command line): a read that takes long.
class ReadFaults {
 public:
  virtual ~ReadFaults() = default;
  /// On a lane's thread, inside a read of `n` bytes at transfer offset
  /// `offset` (counted in flight: retire() waits for it), before any file is touched.
  virtual void before_read(uint64_t offset, uint64_t n) = 0;
};

class SourceReader final : public PieceSource {
 public:
  /// While it grows, only through grow().
  /// `tree` outlives the reader's reads: until retire() has returned.
  SourceReader(uint32_t id, const files::SourceTree& tree, wire::HashAlgo hash,
               compress::Mode compress = compress::Mode::off, std::shared_ptr<ReadFaults> faults = nullptr)
      : id_(id),
        faults_(std::move(faults)),
        compress_(compress),
        tree_(tree),
        hash_(hash),
        layout_(tree.entries),
        laid_out_(tree.size()),
        fds_(512, [&tree](size_t entry, std::string& error) {
          int fd = ::open(tree.local_path(entry).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
          if (fd < 0) error = "cannot open '" + tree.local_path(entry) + "': " + std::strerror(errno);
          return security::UniqueFd(fd);
        }) {}
  uint32_t transfer_id() const override { return id_; }
  wire::HashAlgo hash() const override { return hash_; }
  compress::Mode compress() const override { return compress_.load(std::memory_order_relaxed); }
  /// Pieces go raw from now on: the receiver turned out older than
  /// compression (SenderSession::hear_peer_protocol_locked).
  void stop_compressing() { compress_.store(compress::Mode::off, std::memory_order_relaxed); }
  /// A streamed walk's batch joins the tree (files::append_batch) and its
  /// files the byte space; reads in progress are not disturbed.
  /// `tree` is the reader's own (the caller's, which it reads).
  void grow(files::SourceTree& tree, files::SourceTree&& batch) {
    std::unique_lock lock(grow_mu_);
    files::append_batch(tree, std::move(batch));
    for (; laid_out_ < tree_.size(); ++laid_out_) layout_.append(tree_.entry(laid_out_), laid_out_);
  }
  /// The entries before `entry` are read no more (session::Sender::
  /// entries_needed_from: their bytes are all delivered): the tree and the
  /// byte space let go of them. A stale copy of a delivered piece that
  /// still reads them fails, and says so (released()).
  /// Called by the walk's thread, the tree's only writer: it reads the tree
  /// unlocked, and takes the lanes' lock only when something goes.
  void release_before(files::SourceTree& tree, size_t entry) {
    if (!tree.lets_go_at(entry)) return;
    std::unique_lock lock(grow_mu_);
    tree.release_before(entry);
    layout_.release_before(tree.first);
    released_.store(layout_.start_of(tree.first), std::memory_order_release);
  }
  bool released(uint64_t offset) const override { return offset < released_.load(std::memory_order_acquire); }
  /// What a read after retire() fails with (the session ignores a read
  /// failure of a transfer that is not the one running, by its id).
  static constexpr std::string_view kRetired = "the transfer has ended: its files are no longer read";

  /// The transfer's send call is returning: reads from now on fail with
  /// kRetired; waits for the reads in flight (each at most one piece's
  /// preads), then closes the fds. Afterwards the tree is never touched
  /// again. Idempotent; never called from a lane's thread (it would wait
  /// for itself).
  void retire() {
    std::unique_lock lock(life_mu_);
    retired_ = true;
    life_cv_.wait(lock, [&] { return reading_ == 0; });
    lock.unlock();
    fds_.clear();  // an fd a stale piece still held went with its read
  }
  bool retired() const {
    std::lock_guard lock(life_mu_);
    return retired_;
  }

  bool read(uint64_t off, uint64_t n, uint8_t* dst, std::string& error) override {
    {
      std::lock_guard lock(life_mu_);
      if (retired_) {
        error = kRetired;
        return false;
      }
      ++reading_;
    }
    struct InFlight {
      SourceReader& r;
      ~InFlight() {
        std::lock_guard lock(r.life_mu_);
        if (--r.reading_ == 0) r.life_cv_.notify_all();
      }
    } in_flight{*this};
    if (faults_) faults_->before_read(off, n);
    return read_in_flight(off, n, dst, error);
  }

 private:
  bool read_in_flight(uint64_t off, uint64_t n, uint8_t* dst, std::string& error) {
    // File by file, one fd at a time (a piece of tiny files spans thousands):
    // the lock is let go across each pread and taken again after it; the
    // layout only grows at its end meanwhile, so the walk through it goes on.
    std::shared_lock lock(grow_mu_);
    if (off < released_.load(std::memory_order_relaxed)) {
      error = "internal error: a piece of files already let go";
      return false;
    }
    const bool ok = layout_.for_each(off, n, [&](const files::Extent& x) {
      const bool ends_file = x.file_offset + x.length == tree_.entry(x.entry).size;
      // A whole file in this one read (a tree of small files): opened, read
      // and closed here, as the receiver writes it (ReceiveTree::write).
      const bool whole_file = ends_file && x.file_offset == 0;
      security::UniqueFd own;
      files::FdCache::Fd cached;
      if (whole_file)
        own = fds_.open_once(x.entry, error);
      else
        cached = fds_.get(x.entry, error);
      const int fd = whole_file ? own.get() : cached ? cached->get() : -1;
      if (fd < 0) return false;
      lock.unlock();
      uint8_t* p = dst + (x.transfer_offset - off);
      uint64_t left = x.length, at = x.file_offset;
      ssize_t got = 1;
      while (left > 0) {
        got = ::pread(fd, p, left, static_cast<off_t>(at));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        p += got;
        at += static_cast<uint64_t>(got);
        left -= static_cast<uint64_t>(got);
      }
      const int err = errno;
      lock.lock();
      if (x.entry < tree_.first) {  // let go meanwhile: the piece was delivered
        error = "internal error: a piece of files already let go";
        return false;
      }
      if (left > 0) {
        error = got == 0 ? "'" + tree_.local_path(x.entry) + "' shrank while it was being sent"
                         : std::string("read failed: ") + std::strerror(err);
        return false;
      }
      // After a file's last bytes are read: if it changed since the scan
      // (grew, shrank, was written to), what was sent is not the file —
      // say so rather than deliver a silently cut or mixed copy.
      if (ends_file)
        if (auto why = files::check_unchanged(tree_, x.entry, fd)) {
          error = *why;
          return false;
        }
      return true;
    });
    if (!ok && error.empty()) error = "internal error: a piece outside the files walked so far";
    return ok;
  }

  uint32_t id_;
  std::shared_ptr<ReadFaults> faults_;
  std::atomic<compress::Mode> compress_;
  const files::SourceTree& tree_;  // the caller's: read only until retire() returns
  mutable std::mutex life_mu_;
  std::condition_variable life_cv_;
  bool retired_ = false;  // under life_mu_
  size_t reading_ = 0;    // reads in flight, under life_mu_
  wire::HashAlgo hash_;
  std::shared_mutex grow_mu_;  // grow(): exclusive; a read's lookups: shared
  files::FileLayout layout_;
  size_t laid_out_;  // the tree's entries in layout_
  std::atomic<uint64_t> released_{0};  // where the files of the entries held begin
  files::FdCache fds_;
};


}  // namespace braid::transfer
