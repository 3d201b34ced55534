// Backups at the receiver: rsync's --backup with --suffix / --backup-dir
// (braid's --backup-suffix / --backup-dir; docs/engine.md "Sync"). What a
// transfer replaces, and what --delete removes, is kept under a backup name
// instead of being lost: NAME + suffix beside it, or DIR/NAME + suffix with
// DIR relative to the target. Every path is resolved beneath the target
// (engine/security/safe_path.h): no symlink is followed, nothing outside
// the target is made or moved.
//
// Replacing stays atomic: keep_backup makes the backup as *another name*
// of the old file (a hard link, a copy where the file system has none),
// and the new version is then renamed over the old name as before — so the
// old version never leaves its place before the new one is complete and
// verified, and an interrupted run leaves each name old or new, with or
// without its backup, never half of either.
#pragma once

#include <cstdint>
#include <string>

#include "core/wire/messages.hpp"

namespace braid::files {

struct BackupOptions {
  std::string suffix;  // appended to the leaf ("~"); may be empty with a dir
  std::string dir;     // relative to the target; empty: beside the file
  bool on() const { return !suffix.empty() || !dir.empty(); }
};
BackupOptions backup_options(const wire::SyncOptions& sync);

/// Empty if this receiver takes the options (from the peer: checked like an
/// offered path), else why not.
std::string check_backup_options(const BackupOptions& b);

/// The backup name of `path` (relative to the target, as offered).
std::string backup_path(const BackupOptions& b, const std::string& path);

/// What --delete must leave alone, as rsync's protect rule for backups:
/// without a dir, a name that ends in the suffix; with one, the backup
/// directory, what is below it, and the directories that hold it.
bool is_backup(const BackupOptions& b, const std::string& path);

/// Keeps what stands at `path` — a file or a symlink; nothing there, or a
/// directory, is left alone — under its backup name: made as `temp_leaf` in
/// the backup's directory (which is created), then renamed over an older
/// backup there. `path` itself is not touched. Empty on success, else what
/// failed. `made_in` (if not null) gets the backup's directory, relative
/// to the target, when a backup was made (its entry must be made durable
/// before `path` is replaced).
std::string keep_backup(int root_fd, const BackupOptions& b, const std::string& path, const std::string& temp_leaf,
                        std::string* made_in);

/// --delete with backups: moves `path` (a file, a link, or a directory with
/// everything in it) to its backup name in one rename, replacing an older
/// backup there. Adds 1 to `moved` when it moved something. Empty on
/// success (or nothing there), else what failed.
std::string move_to_backup(int root_fd, const BackupOptions& b, const std::string& path, uint64_t& moved);

}  // namespace braid::files
