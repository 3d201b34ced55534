// What interrupted transfers leave in a target directory and no later offer
// asks for: the temporary files (".braid-<tag>-<i>.part", ".braid-<tag>-<i>.link",
// in each file's final directory), staged directories (".braid-<tag>-<i>.dir",
// removed with everything in them; receive_tree.hpp) and the resume journal (".braid-resume-<tag>",
// in the target) of a transfer whose source then changed — another offer,
// another key, another tag — and the probe file of a receiver that died while
// checking the target (".braid-probe-<pid>").
//
// clean_debris removes them by transfer (tag), with two exceptions:
//   - a transfer whose journal is locked: it is running (its receiver holds
//     the lock), so its files are in use;
//   - a transfer touched within `older_than` (the newest mtime of its
//     files): it may still resume — the same command run again finds its
//     journal and its .part files and sends only what is missing — so it is
//     kept until it has been left alone that long.
// While a transfer's files are removed its journal is locked, and removed
// last, so a receiver offered that transfer meanwhile waits and then starts
// it afresh (ResumeJournal::open never uses a journal removed under it).
// No other name is touched, symlinks are never followed, and nothing outside
// the directory is looked at.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace braid::files {

struct DebrisOptions {
  std::chrono::seconds older_than{7 * 24 * 3600};
  bool dry_run = false;  // say what would go, remove nothing
};

struct DebrisEntry {
  std::string path;  // relative to the directory
  std::string tag;   // the transfer's (16 hex digits), or "probe"
  uint64_t bytes = 0;
  std::string why;   // kept: why; removed: empty, or the error
};

struct DebrisResult {
  std::vector<DebrisEntry> removed;  // (with dry_run: would be)
  std::vector<DebrisEntry> kept;
  std::vector<DebrisEntry> failed;   // could not be removed (why says the error)
  uint64_t removed_bytes = 0;
  size_t removed_transfers = 0;
};

DebrisResult clean_debris(int dir_fd, const DebrisOptions& opts,
                          std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

/// "7d", "12h", "30min" (or "30m"), "45s", "2w", "0"; nullopt if not one.
std::optional<std::chrono::seconds> parse_age(std::string_view text);
/// The same, for messages: "7d", "90s", …
std::string format_age(std::chrono::seconds s);

}  // namespace braid::files
