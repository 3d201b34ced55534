// The receiver's side of one transfer on disk, strictly beneath the target
// directory (every open goes through engine/security/safe_path.h, so no path
// from the peer and no symlink planted in the target can lead outside).
//
//   prepare   checks every path of the offer, creates the directories and
//             one temporary file per regular file, in the file's final
//             directory: ".braid-<tag>-<index>.part" (tag: TransferKey::tag,
//             so the same offer from the same sender finds the same names
//             again; with `keep_parts` an existing one is reopened as it is,
//             for a resume);
//   write     pwrite of verified bytes at their transfer offset (any thread);
//   finalize  fsync, owner and group (-o, -g), xattrs and ACLs (-X, -A),
//             mode, mtime, then rename into place — so no partial file
//             ever stands under its final name; then symlinks, then the
//             directories' modes and mtimes (deepest first).
// On any failure the temporary files stay where they are.
#pragma once

#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engine/files/entry_metadata.hpp"
#include "engine/files/fd_cache.hpp"
#include "engine/files/file_layout.hpp"
#include "engine/files/link_policy.hpp"
#include "engine/security/safe_path.h"
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
};

/// A symlink of the offer that finalize will not create, and why.
struct SkippedLink {
  size_t entry = 0;
  std::string path;  // as offered
  std::string target;
  std::string reason;
};

class ReceiveTree {
 public:
  /// `root_fd`: the target directory (borrowed; must outlive the tree).
  static std::variant<std::unique_ptr<ReceiveTree>, PrepareError> prepare(int root_fd, const wire::Offer& offer,
                                                                          const PrepareOptions& opts);

  /// Writes `data` at transfer offset `offset`. 0 or the errno of the failure.
  /// Once finalize has begun, writes are dropped (a late duplicate copy of
  /// a piece must not touch a file whose mtime is already set).
  int write(uint64_t offset, std::span<const uint8_t> data);

  /// Makes the written bytes of a file entry durable (fdatasync). 0 or errno.
  int sync_file(size_t entry);
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
  /// The entry's path as offered.
  const std::string& path(size_t entry) const { return entries_[entry].path; }

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

 private:
  ReceiveTree(int root_fd, const wire::Offer& offer, std::string tag);
  std::optional<PrepareError> create_all(bool keep_parts);
  /// finalize of a keep_existing entry.
  std::string settle_existing(size_t entry, int& err);
  /// Owner, group and xattrs of entry i onto `fd` (or its `leaf` in directory
  /// `fd`, a symlink); what fails becomes a metadata warning.
  void apply_metadata(int fd, const std::string& leaf, size_t i);

  int root_fd_;
  std::vector<wire::ManifestEntry> entries_;
  std::vector<security::RelativePath> paths_;  // validated, one per entry
  std::string tag_;
  FileLayout layout_;
  FdCache fds_;
  std::shared_mutex sealing_;  // write: shared; finalize: exclusive
  bool sealed_ = false;
  std::vector<bool> kept_;  // by entry
  std::vector<int64_t> found_;  // by entry: part_size_found
  std::vector<SkippedLink> skipped_links_;
  std::vector<bool> link_skipped_;  // by entry
  std::vector<bool> keep_;           // by entry: PrepareOptions::keep
  std::vector<bool> refresh_;        // by entry: PrepareOptions::refresh
  std::vector<bool> keep_existing_;  // by entry: keep_existing()
  IdMapper ids_;
  std::vector<std::string> metadata_warnings_;
  size_t metadata_failures_ = 0;
};

/// Checks that `dir` is a directory braid can create files in (a probe file
/// is created and removed). Empty string if so, else why not.
std::string check_writable_dir(int dir_fd, const std::string& shown_name);

}  // namespace braid::files
