// Sync, the receiver's file work (docs/engine.md, "Sync"): what stands at an
// offered file's final place, what the offered directories hold that the
// offer does not name (--delete), and removing it. Every path is resolved
// beneath the target (engine/security/safe_path.h): no symlink, planted or
// offered, is followed, and nothing outside the target is read or removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/wire/messages.hpp"
#include "engine/security/unique_fd.h"

namespace braid::files {

/// What stands at `path` (relative, as offered) beneath `root_fd`, not
/// following a final symlink: kind 0 nothing (or no such parent), 1 a
/// regular file, 2 something else.
struct FoundFile {
  int kind = 0;
  uint64_t size = 0;
  int64_t mtime_sec = 0;
  uint32_t mtime_nsec = 0;
};
FoundFile stat_beneath(int root_fd, const std::string& path);

/// stat_beneath for many paths in offer order: the parent directory stays
/// open while consecutive paths share it (an offer lists a directory's
/// files together), so a tree of 100,000 files costs one resolution per
/// directory, not one per file.
class TargetStat {
 public:
  explicit TargetStat(int root_fd) : root_fd_(root_fd) {}
  FoundFile at(const std::string& path);

 private:
  int root_fd_;
  bool opened_ = false;  // a parent was looked up (parent_, dir_ say which and how)
  std::string parent_;   // as offered; "" = the target itself
  security::UniqueFd dir_;  // invalid: that parent is not there (or not a directory)
};

/// The paths (relative to the target) that the offer's directories hold on
/// the receiver and the offer does not name, in sorted order: a directory
/// among them stands for everything beneath it. braid's own temporary names
/// (".braid-…") are never among them. Only directories the offer names are
/// listed — the target directory itself is not, so --delete touches only
/// the trees the sender sent, as `rsync -a --delete SRC/dir DEST/`. With
/// the offer's backup options, backups are never among them (is_backup).
std::vector<std::string> find_extraneous(int root_fd, const wire::Offer& offer);

/// Removes `path` beneath `root_fd` — a file or link, or a directory and
/// everything in it, never following a link. Counts what it removed;
/// empty on success, else the first failure.
std::string remove_tree_beneath(int root_fd, const std::string& path, uint64_t& removed);

}  // namespace braid::files
