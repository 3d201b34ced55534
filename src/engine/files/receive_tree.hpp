// The receiver's side of one transfer on disk, strictly beneath the target
// directory (every open goes through engine/security/safe_path.h, so no path
// from the peer and no symlink planted in the target can lead outside).
//
//   prepare   checks every path of the offer, creates the directories; one
//             temporary file per regular file, in the file's final
//             directory: ".braid-<tag>-<index>.part" (tag: TransferKey::tag,
//             so the same offer from the same sender finds the same names
//             again) is made when the file's first bytes are written (or
//             at finalize, for an empty file), so making a big tree's files
//             overlaps its transfer; with `keep_parts` (a resume) they are
//             all opened at prepare, an existing one as it is;
//   write     pwrite of verified bytes at their transfer offset (any thread);
//   finalize  fsync (one syncfs for a tree of many files), owner and group
//             (-o, -g), xattrs and ACLs (-X, -A), mode, mtime, then rename
//             into place — so no partial file ever stands under its final
//             name; then symlinks, then the directories' modes and mtimes
//             (deepest first).
// A tree of many small files costs a few system calls per file: the
// directories that hold them are opened once (beneath the target, never
// through a symlink) and kept open while their files are created, written
// and renamed (DirCache below).
// Staged directories (an offer of kStageFrom files or more): a directory of
// the offer that does not exist in the target is made under a temporary
// name, ".braid-<tag>-<index>.dir", in its parent, and everything beneath it
// is made there under its final leaf name — nothing in it stands under its
// final path before finalize renames the staged directory into place, once
// for the whole subtree instead of once per file. A file whose every byte
// was written exactly once gets its mtime from the thread that wrote its
// last byte (futimens on the open file), so finalize has nothing left to do
// per file in a staged directory but check that. A resume finds the staged
// directory again by its name (the same offer, the same tag).
// On any failure the temporary files stay where they are.
//
// Part by part (protocol 9, an offer answered as its parts arrive):
// begin_parts with the offer's head, add_part for each run of entries — the
// same checks as prepare's, against the entries before them (paths, names
// twice, a parent sent as no directory, hard links to an earlier file),
// the free space against the running total of their data, their
// directories made (a new one staged), their files checked and made when
// their first bytes come — then close_parts with the offer's fields, which
// decides the links (--links needs every link of the offer). The parts are
// the session machine's, shared and read in place: one copy of the entries. Pieces of the
// entries added so far may be written meanwhile, on other threads.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <stdexcept>
#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/files/backup.hpp"
#include "engine/files/entry_metadata.hpp"
#include "engine/files/fd_cache.hpp"
#include "engine/files/file_layout.hpp"
#include "engine/files/link_policy.hpp"
#include "engine/files/path_index.hpp"
#include "engine/files/path_order.hpp"
#include "engine/files/piece_hasher.hpp"
#include "engine/files/slot_window.hpp"
#include "engine/security/safe_path.h"
#include "core/wire/entry_parts.hpp"
#include "core/wire/messages.hpp"

namespace braid::files {

struct PrepareError {
  wire::RefuseReason reason;
  std::string message;
};

struct PrepareOptions {
  std::string tag;          // names the temporary files (TransferKey::tag)
  bool keep_parts = false;  // reopen existing temporary files without truncating them (resume)
  /// Bytes of the transfer already on disk (resume): the free-space check
  /// asks only for the rest.
  uint64_t bytes_present = 0;
  /// Which of the offer's symlinks finalize creates (link_policy.hpp).
  LinkPolicy links = LinkPolicy::safe;
  /// Sync, by entry: files the receiver keeps as they are — no temporary
  /// file, nothing written, nothing put in place (empty: none).
  std::vector<bool> keep = {};
  /// Sync, by entry: kept files found unchanged (size and mtime): finalize
  /// gives them the offer's mode, owner, group and xattrs, as rsync's quick
  /// check does (empty: none). Files kept by --update or --ignore-existing
  /// are left as they are.
  std::vector<bool> refresh = {};
  /// What finalize replaces is kept under a backup name first (backup.hpp).
  BackupOptions backup = {};
  /// Free bytes in the target for the free-space checks, when the caller
  /// knows better than the file system (a test's disk, through
  /// transfer::DiskFaults); nullopt: what fstatvfs says.
  std::optional<uint64_t> free_space = std::nullopt;
};

/// A symlink of the offer that finalize will not create, and why.
struct SkippedLink {
  size_t entry = 0;
  std::string path;  // as offered
  std::string target;
  std::string reason;
};

/// Open directories beneath the target by relative path ("" is the target
/// itself), opened on first use and shared by every thread, bounded like
/// FdCache: a tree's files come directory by directory, so a few dozen
/// hold nearly every hit.
class DirCache {
 public:
  using Fd = std::shared_ptr<security::UniqueFd>;
  DirCache(int root_fd, size_t capacity) : root_fd_(root_fd), capacity_(capacity) {}
  /// The directory at `parent` (components joined by '/'), created (like
  /// mkdir -p, mode `create_mode`) when `create` is set; nullptr with
  /// `error` set if it cannot be opened as a directory beneath the target.
  Fd get(const std::string& parent, bool create, std::string& error, security::Errc* code = nullptr,
         mode_t create_mode = 0755);
  void clear();

 private:
  int root_fd_;
  size_t capacity_;
  std::mutex mu_;
  std::unordered_map<std::string, Fd> open_;
};

class ReceiveTree {
 public:
  /// `root_fd`: the target directory (borrowed; must outlive the tree).
  /// The tree reads the offer's entries in place and keeps `offer` alive
  /// (the receiving session shares the same one: no copy per entry).
  static std::variant<std::unique_ptr<ReceiveTree>, PrepareError> prepare(int root_fd,
                                                                          std::shared_ptr<const wire::Offer> offer,
                                                                          const PrepareOptions& opts);
  /// The same on a copy of `offer` (tests).
  static std::variant<std::unique_ptr<ReceiveTree>, PrepareError> prepare(int root_fd, const wire::Offer& offer,
                                                                          const PrepareOptions& opts) {
    return prepare(root_fd, std::make_shared<const wire::Offer>(offer), opts);
  }

  /// Part by part (see the top): the head's fields, no entry yet. The tag
  /// (PrepareOptions::tag) is this transfer's own, as its key needs the
  /// whole offer; keep_parts, keep and refresh do not apply.
  static std::variant<std::unique_ptr<ReceiveTree>, PrepareError> begin_parts(int root_fd, const wire::Offer& head,
                                                                              const PrepareOptions& opts);
  /// Entries [first, first + entries.size()): checked against the entries
  /// before them and made room for; their pieces may be written from the
  /// return on. Control thread; `first` is the number of entries so far.
  /// The part is shared with the session machine, which never changes it:
  /// the tree reads its entries in place.
  std::optional<PrepareError> add_part(size_t first, wire::EntryParts::Part entries);
  /// Every part is in: `fields` are the whole offer's (its entries are the
  /// parts'), and the links are decided.
  std::optional<PrepareError> close_parts(std::shared_ptr<const wire::Offer> fields);
  /// Part by part, an offer in path order (wire::Offer::ordered: no entry
  /// links to another): lets go of the parts whose every byte lies before
  /// `verified_to` (every byte before it verified and written, or a hole:
  /// session::Receiver::verified_prefix), and their slots (slot_window.hpp).
  /// Beneath a staged directory, a file is settled — given now what
  /// finalize would give it: made if empty, owner, group, xattrs, mode,
  /// mtime; nothing for one written once whose mode and mtime are set —
  /// and forgotten, and so is a directory once the walk has left it and
  /// everything beneath it is forgotten, from the leaves up. The others
  /// (links, the staged directories themselves, entries outside a staged
  /// directory, read-only ones, what failed to settle) are copied, one by
  /// one, for finalize. A later copy of a piece over a file let go is
  /// dropped: its bytes are on disk, verified. Control thread, as
  /// finalize; returns the entries forgotten.
  size_t release_written(uint64_t verified_to);
  /// Entries forgotten so far (release_written), and copied.
  size_t entries_forgotten() const { return forgotten_; }
  size_t entries_copied() const { return copied_; }
  /// Entries whose state the tree still keeps: those not yet let go, and
  /// the copies (the rest cost nothing: slot_window.hpp). Control thread.
  size_t entries_held() const { return slots_.held(); }
  /// Directories of entries the tree still keeps (each one's place on disk).
  size_t directories_held() const { return places_.size(); }
  /// Part by part: every entry added so far, in the parts they came in
  /// (empty for a tree prepared from a whole offer). Control thread.
  const wire::EntryParts& parts() const { return parts_; }
  /// The tag the temporary files are named by (PrepareOptions::tag).
  const std::string& tag() const { return tag_; }
  /// The transfer's bytes so far (all of them once the offer is whole); any thread.
  uint64_t total() const { return total_.load(std::memory_order_acquire); }

  /// Writes `data` at transfer offset `offset`. 0 or the errno of the failure.
  /// Once finalize has begun, writes are dropped (a late duplicate copy of
  /// a piece must not touch a file whose mtime is already set).
  int write(uint64_t offset, std::span<const uint8_t> data);

  /// Makes the written bytes of a file entry durable (fdatasync). 0 or errno.
  int sync_file(size_t entry);
  /// The same for several entries: one syncfs of the target's file system
  /// when they are more than kSyncEachFileUpTo. 0 or the errno of the first failure.
  int sync_files(const std::set<size_t>& entries);
  /// Makes the bytes of these pieces durable (all written): sync_files of
  /// the files they touch, one syncfs if some of those were let go. 0 or errno.
  int sync_pieces(const std::vector<PieceRecord>& pieces);
  /// Up to this many files, each is fsynced; beyond, one syncfs (sync_files, finalize).
  static constexpr size_t kSyncEachFileUpTo = 16;
  /// With keep_parts: the entry's temporary file was there already, at its
  /// full size, and was kept as it was (its bytes may be resumed).
  bool part_kept(size_t entry) const { return entry < kept_.size() && kept_[entry]; }
  /// With keep_parts: the size the entry's temporary file had when it was
  /// reopened (-1: there was none), before it was cut or extended to the
  /// file's size. Resume reads back what it holds either way (held_verify.hpp).
  int64_t part_size_found(size_t entry) const { return entry < found_.size() ? found_[entry] : -1; }
  /// Reads `out.size()` bytes at transfer offset `offset` from the temporary
  /// files (any thread). 0 or the errno of the failure (EINVAL: outside the transfer).
  int read(uint64_t offset, std::span<uint8_t> out);

  /// Everything verified: put every entry in place. Empty string on success,
  /// else what failed (and errno in `err`).
  std::string finalize(int& err);

  // ---- sync: the file that stands at an entry's final place now ----------
  /// Opened read-only (a link is not followed); invalid if there is none.
  security::UniqueFd open_existing(size_t entry) const;
  /// Copies `length` bytes at `file_offset` of the existing file into the
  /// entry's temporary file at the same offset (copy_file_range: in the
  /// kernel, a reflink where the file system shares extents). 0 or errno.
  int copy_from_existing(size_t entry, uint64_t file_offset, uint64_t length);
  /// The existing file already holds exactly the entry's bytes (every
  /// chunk's hash matched): finalize gives it the entry's mode and mtime
  /// and drops the temporary file instead of renaming it over.
  void keep_existing(size_t entry);
  /// The entry's path as offered (std::out_of_range for an entry forgotten: release_written).
  const std::string& path(size_t i) const { return entry(i).path; }
  /// The entries and the files among them so far (all of them once the
  /// offer is whole); any thread.
  size_t entry_count() const { return entry_count_.load(std::memory_order_acquire); }
  size_t file_count() const { return file_count_.load(std::memory_order_acquire); }

  const FileLayout& layout() const { return layout_; }
  /// The offer's links that --links keeps out of the target (decided at prepare).
  const std::vector<SkippedLink>& skipped_links() const { return skipped_links_; }
  /// After finalize: owners, groups or xattrs the offer carried that this
  /// system would not take (not root, a file system without xattrs, a
  /// trusted.* name as a user), one line each, the first 100. The files
  /// are in place with their data either way, as with rsync.
  const std::vector<std::string>& metadata_warnings() const { return metadata_warnings_; }
  size_t metadata_failures() const { return metadata_failures_; }
  /// Temporary name of a file entry, relative to the target (for messages and tests).
  std::string temp_path(size_t entry) const;
  /// Directories of the offer made under a temporary name (see the top).
  size_t staged_directories() const { return stage_roots_.size(); }
  /// From this many files in an offer, its new directories are staged.
  static constexpr size_t kStageFrom = 256;

 private:
  ReceiveTree(int root_fd, std::shared_ptr<const wire::Offer> offer, std::string tag);
  /// add_part's checks and growth, once the part is in order.
  std::optional<PrepareError> join_part(size_t first, wire::EntryParts::Part entries);
  /// --links: which of the offer's symlinks finalize creates (prepare, close_parts).
  void decide_links(LinkPolicy links);
  std::optional<PrepareError> create_all(bool keep_parts);
  /// FdCache's opener: the entry's temporary file, made first if it is not yet.
  security::UniqueFd open_temp(size_t entry, std::string& error);
  /// A file's whole bytes in one write, into a file not made yet: makes,
  /// writes and closes it (write()). 0 or errno.
  int write_whole(const Extent& x, const uint8_t* p);
  /// Makes the entry's temporary file in `dir` (empty; a sparse one sized).
  security::UniqueFd create_temp(int dir, size_t entry, std::string& error);
  /// Gives a temporary file its final mode when that keeps it writable (Slot::mode_set).
  void set_final_mode(int fd, size_t entry);
  /// A directory entry made on disk (or its staged temporary name), with
  /// whatever is missing above it (prepare, add_part).
  std::optional<PrepareError> make_directory(size_t entry);
  /// create_file for each of `files`, directories in parallel for a big
  /// tree (prepare, add_part); the first failure.
  std::optional<PrepareError> create_files(const std::vector<size_t>& files, bool keep_parts);
  /// A file entry's temporary file (create_files, on any of its threads).
  std::optional<PrepareError> create_file(size_t entry, bool keep_parts);
  /// Puts a file entry in place (finalize, on any of its threads); empty or what failed.
  std::string finalize_file(size_t entry, bool synced, int& err);
  /// `work(entry)` for each of `entries` (in manifest order within each
  /// directory), directories in parallel for a big tree; stops once a call
  /// returns false.
  template <class Work>
  void for_each_directory(const std::vector<size_t>& entries, Work work);
  /// finalize of a keep_existing entry.
  std::string settle_existing(size_t entry, int& err);
  /// finalize, before anything is replaced: a backup of each file and link
  /// that stands where an entry goes, made durable (PrepareOptions::backup).
  std::string keep_backups(int& err);
  /// The temporary file's name in its directory: ".braid-<tag>-<entry>.part",
  /// or its final leaf in a staged directory.
  std::string temp_leaf(size_t entry) const;
  /// Decides which directories are staged (prepare): their places' disk paths, the slots' staged.
  void plan_staging(size_t files);
  /// Where an entry is on disk until finalize, relative to the target.
  std::string disk_path(size_t entry) const;
  /// The directory that holds entry `entry` (DirCache).
  DirCache::Fd parent_dir(size_t entry, bool create, std::string& error, security::Errc* code = nullptr);
  /// Owner, group and xattrs of entry i onto `fd` (or its `leaf` in directory
  /// `fd`, a symlink); what fails becomes a metadata warning.
  void apply_metadata(int fd, const std::string& leaf, size_t i);

  int root_fd_;
  std::shared_ptr<const wire::Offer> offer_;
  static constexpr uint8_t kInStaged = 1, kStageRoot = 2;
  /// Whether an entry's temporary file is made yet: prepare only checks,
  /// the first write makes it (with keep_parts, prepare made them all).
  static constexpr uint8_t kCreated = 0, kToCreate = 1, kCreating = 2;
  /// The directories that hold entries, each once, by relative path (""
  /// for the target): where it is on disk until finalize (the same, or
  /// beneath a staged directory's temporary name). Each entry points to
  /// its own (8 bytes an entry rather than a path each); nodes never move.
  struct Place {
    std::string disk;
    bool staged = false;  // beneath a staged directory: its entries are made under their final leaf
    size_t users = 0;     // slots held that point here; at 0 an ordered offer's walk forgets it
  };
  using Places = std::unordered_map<std::string, Place>;
  using Dir = Places::value_type;
  Places places_;
  /// What the tree keeps of one entry until finalize (slot_window.hpp).
  struct Slot {
    const wire::ManifestEntry* entry;  // in place: the offer's, a part's, or `copy`
    Dir* dir;                          // the directory that holds it
    uint8_t staged = 0;                // 0, kInStaged (beneath a staged directory) or kStageRoot
    uint8_t mode_set = 0;              // its temporary file got its final mode when it was made
    bool keep = false;                 // PrepareOptions::keep
    bool refresh = false;              // PrepareOptions::refresh
    bool keep_existing = false;        // keep_existing()
    bool link_skipped = false;         // decide_links
    std::atomic<uint8_t> create_state{kCreated};
    /// Without keep_parts, a file's bytes still to be written (its size at
    /// prepare, -1 for none to write); the write that brings it to exactly
    /// 0 sets the file's mtime. A copy written twice, a sparse file's holes
    /// or bytes copied from an existing file leave it elsewhere, and
    /// finalize sets the mtime as before.
    std::atomic<int64_t> unwritten{-1};
    /// Set aside by release_written: its entry, copied (the part it came in goes).
    std::unique_ptr<const wire::ManifestEntry> copy;
    Slot(const wire::ManifestEntry* e, Dir* d) : entry(e), dir(d) {}
    Slot(Slot&& o) noexcept
        : entry(o.entry), dir(o.dir), staged(o.staged), mode_set(o.mode_set), keep(o.keep), refresh(o.refresh),
          keep_existing(o.keep_existing), link_skipped(o.link_skipped), create_state(o.create_state.load()),
          unwritten(o.unwritten.load()), copy(std::move(o.copy)) {}
  };
  SlotWindow<Slot> slots_;
  /// Entry i's slot (std::out_of_range for an entry forgotten: release_written).
  Slot& slot(size_t i) {
    Slot* s = slots_.find(i);
    if (!s) throw std::out_of_range("entry " + std::to_string(i) + " was forgotten");
    return *s;
  }
  const Slot& slot(size_t i) const { return const_cast<ReceiveTree*>(this)->slot(i); }
  const wire::ManifestEntry& entry(size_t i) const { return *slot(i).entry; }
  /// Not forgotten (release_written).
  bool held(size_t i) const { return slots_.find(i) != nullptr; }
  /// The entry's slot joins the tree (prepare, add_part), its directory counted.
  Slot& add_slot(const wire::ManifestEntry& e, Dir* d) {
    ++d->second.users;
    return slots_.emplace_back(&e, d);
  }
  wire::EntryParts parts_;
  /// release_written: the entries of parts let go that finalize still
  /// needs were copied (Slot::copy); the transfer offset of the next part
  /// to let go.
  size_t copied_ = 0;
  uint64_t release_offset_ = 0;
  size_t forgotten_ = 0;
  /// In path order: the directories of the offer the walk has left (no
  /// later entry lies beneath them), deepest first, until each is ready to
  /// settle (ready_directories) or left to finalize.
  std::vector<size_t> dirs_left_;
  /// release_written: of dirs_left_, those let go, beneath a staged
  /// directory, settled early and with nothing held beneath them any more
  /// join `settle` (and leave dirs_left_). Under sealing_, exclusive.
  void ready_directories(std::vector<size_t>& settle);
  /// release_written: what finalize's last steps would do for a file whose
  /// every byte is written or a directory with nothing left to make in it,
  /// beneath a staged directory (made if empty; owner, group, xattrs,
  /// mode, mtime). False if something failed: finalize tries again and
  /// says what. Control thread, without the lock (the entry is let go:
  /// no lane writes it).
  bool settle_file(size_t i);
  /// Owner, group, xattrs, mode and mtime of entry i onto `fd` (settle_file,
  /// settle_directory); false if the mode or mtime failed.
  bool set_attributes(int fd, size_t i);
  bool settle_directory(size_t i);
  /// File entry i is whole, written once, its mode and mtime set, with no
  /// owner, group or xattrs to apply: once durable, finalize has nothing
  /// left to do for it but its name (finalize_file, release_written).
  bool written_and_set(size_t i) const;
  /// The entries held (not forgotten), first to last: what finalize's steps go over.
  std::vector<size_t> held_entries();
  /// A slot that goes: its directory's place with the last one in it.
  void forget(Slot& s);
  /// A slot set aside for finalize: its entry copied (its part goes).
  void keep_copy(Slot& s);
  /// Whether release_written settles such an entry itself (else finalize does).
  static bool settles_early(const wire::ManifestEntry& e);
  std::atomic<uint64_t> total_{0};
  std::atomic<size_t> entry_count_{0}, file_count_{0};
  /// Part by part only, until close_parts: what the checks of later parts
  /// need of the earlier ones, the room counted.
  struct Growing {
    PathIndex seen;  // every path so far, by entry (the directories: by their entry's kind)
    std::unordered_map<std::string, std::string> staged;  // a staged directory's path → where it is on disk
    /// In path order: the directory entries the last path lies beneath,
    /// outermost first. One the walk leaves goes to dirs_left_ (and out
    /// of `staged`): no later entry can lie beneath it.
    struct Open {
      std::string path;
      size_t entry;
    };
    std::vector<Open> open;
    uint64_t data = 0;                                  // data bytes of the entries so far
    std::optional<uint64_t> avail;                      // free in the target at begin_parts, if known
    bool refused = false;  // a part was refused: no other may follow
    /// wire::Offer::ordered: the order is checked against the last path
    /// alone, and `seen` stays empty (no path of an earlier entry is read).
    bool ordered = false;
    PathOrder order;
  };
  std::unique_ptr<Growing> growing_;
  /// The walk (in path order) has come to `path`: the open directories it
  /// does not lie beneath are left (dirs_left_).
  void leave_directories(Growing& g, const std::string& path);
  LinkPolicy links_ = LinkPolicy::safe;  // part by part: decided at close_parts
  bool ordered_ = false;                  // part by part: the head's wire::Offer::ordered
  /// An entry's path, checked at prepare (parsed again when a call needs
  /// it: most files need only their leaf).
  security::RelativePath rel(size_t i) const { return security::RelativePath::parse(entry(i).path).value(); }
  std::string leaf(size_t i) const {
    const std::string& p = entry(i).path;
    return p.substr(p.rfind('/') + 1);  // npos + 1 == 0: a top-level name whole
  }
  std::string tag_;
  FileLayout layout_;
  const std::string& parent(size_t i) const { return slot(i).dir->first; }
  const std::string& disk_parent(size_t i) const { return slot(i).dir->second.disk; }
  struct StageRoot {
    size_t entry;           // the directory's entry
    std::string disk_path;  // relative to the target: its temporary name
  };
  std::vector<StageRoot> stage_roots_;  // outermost staged directories, renamed at finalize
  DirCache dirs_;
  mode_t umask_;  // the process's, read once
  FdCache fds_;
  std::shared_mutex sealing_;  // write: shared; finalize: exclusive
  bool sealed_ = false;
  std::vector<uint8_t> kept_;   // by entry, with keep_parts (bytes, not bits: prepare's threads set them)
  std::vector<int64_t> found_;  // by entry, with keep_parts: part_size_found
  std::vector<SkippedLink> skipped_links_;
  BackupOptions backup_;
  IdMapper ids_;
  std::vector<std::string> metadata_warnings_;
  std::mutex metadata_mu_;  // guards the warnings: files are finalized in parallel
  size_t metadata_failures_ = 0;
};

/// Checks that `dir` is a directory braid can create files in (a probe file
/// is created and removed). Empty string if so, else why not.
std::string check_writable_dir(int dir_fd, const std::string& shown_name);

}  // namespace braid::files
