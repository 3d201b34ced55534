// The sender's view of what it sends: the PATHs given on the command line
// walked into a manifest (files, directories, symlinks with their modes and
// mtimes), each entry remembering where it lives on this machine and what
// stat said of it then.
//
// Names are taken byte for byte (spaces, newlines, non-UTF-8 all kept). A
// PATH arrives under its last component, like `scp -r` and `rsync` without
// a trailing slash. Symlinks are sent as links, never followed, unless
// `follow_symlinks` is set: then a link to a file is sent as that file, a
// link to a directory as that directory — except a link that leads back to
// a directory it is inside (a loop), and a link that leads nowhere.
//
// What braid cannot send is skipped with a reason, and the walk goes on:
// FIFOs, sockets and devices (reading them would block, or never end), a
// file or directory that cannot be opened, an entry that vanished while the
// walk ran, a symlink loop or a broken link when following. With `strict`,
// the first such entry is an error instead.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/wire/messages.hpp"
#include "engine/files/entry_metadata.hpp"

namespace braid::files {

/// What stat said of an entry when the manifest was made (the followed
/// target's, for a followed link).
/// 48 bytes an entry (timespecs and nlink_t took 64).
struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;  // since the epoch
  int64_t ctime_ns = 0;
  dev_t dev = 0;
  ino_t ino = 0;
  uint32_t nlink = 1;  // capped: what counts is whether the file has other names
};
/// A stat time as FileStamp keeps it.
/// (Unsigned arithmetic: a time past 2262 wraps, the same way on both sides
/// of a comparison, rather than overflowing.)
inline int64_t stamp_ns(const timespec& t) {
  return static_cast<int64_t>(static_cast<uint64_t>(t.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(t.tv_nsec));
}

/// Where each entry of a SourceTree is on this machine. An entry's local
/// path is nearly always a prefix (its PATH's parent, as given) followed by
/// its manifest path, so only the prefixes and the entries found elsewhere
/// (a followed link to a file: the file's real path) are kept. A full path
/// an entry took ~100 bytes: 0.1 GB a million entries (issue 18).
class LocalPaths {
 public:
  /// Entry size() is at `local`; its manifest path is `rel`.
  void push(const std::string& local, const std::string& rel);
  /// The local path of entry `i`, whose manifest path is `rel`.
  std::string of(size_t i, const std::string& rel) const;
  size_t size() const { return count_; }
  /// `more`'s entries after these.
  void append(LocalPaths&& more);
  /// Prefixes and paths kept whole (for tests: what the saving rests on).
  size_t kept() const { return prefixes_.size() + elsewhere_.size(); }
  /// Entries before `entry` are asked for no more (SourceTree::release_before).
  void release_before(size_t entry);

 private:
  struct Kept {
    size_t entry;  // prefixes: the first entry under it
    std::string text;
  };
  std::vector<Kept> prefixes_;   // by entry, ascending
  std::vector<Kept> elsewhere_;  // by entry, ascending
  size_t count_ = 0;
};

struct SourceTree {
  /// Entries `first` … size() - 1 of the tree, by their index in the whole
  /// tree (a streamed walk lets go of the ones before: release_before).
  std::vector<wire::ManifestEntry> entries;
  LocalPaths local_paths;        // one per entry
  std::vector<FileStamp> stamps;  // one per entry held
  uint64_t total_bytes = 0;
  size_t file_count = 0;
  size_t first = 0;
  /// The holes of the sparse files among the entries let go (the report's
  /// hole bytes are these and the held entries' ones).
  uint64_t released_hole_bytes = 0;
  /// Entries walked, the ones let go included.
  size_t size() const { return first + entries.size(); }
  /// Entry `i` of the whole tree (i >= first).
  const wire::ManifestEntry& entry(size_t i) const { return entries[i - first]; }
  const FileStamp& stamp(size_t i) const { return stamps[i - first]; }
  /// Where entry `i` is on this machine (a followed link to a file: the file's real path).
  std::string local_path(size_t i) const { return local_paths.of(i, entry(i).path); }
  /// Lets go of the entries before `i` (issue 18: a streamed walk's memory
  /// is a window, not the tree). They go once they are as many as the
  /// entries still held (or 65,536), so each entry moves O(1) times on
  /// average; until then they stay, unread.
  void release_before(size_t i);
  /// Whether release_before(i) would let any entry go now.
  bool lets_go_at(size_t i) const;
};

struct SkippedSource {
  std::string path;    // as found on this machine
  std::string reason;  // "a FIFO (named pipe)", "cannot open: Permission denied", …
};

struct ScanOptions {
  bool follow_symlinks = false;
  bool strict = false;  // a source that would be skipped is an error
  /// `braid send -S`: a file with holes lists its data ranges
  /// (ManifestEntry::data); its holes are not read, sent or written.
  bool sparse = false;
  /// `braid send -H`: files with several names in the tree (same device and
  /// inode) are sent once; the later names are links to the first
  /// (ManifestEntry::hard_link_to, group_hard_links).
  bool hard_links = false;
  /// -o, -g, --numeric-ids, -X, -A: owner, group and extended attributes
  /// in the entries (ManifestEntry::owner, group, xattrs; entry_metadata.hpp).
  MetadataOptions metadata{};
};

struct ScanResult {
  SourceTree tree;
  std::vector<SkippedSource> skipped;
  std::string error;  // empty on success; else a sentence naming the path
  bool ok() const { return error.empty(); }
};

ScanResult scan_sources(const std::vector<std::string>& paths, const ScanOptions& opts);

/// One batch of a streamed walk: entries `first`, first + 1, … of the whole
/// tree with their local paths and stamps, total_bytes and file_count of
/// these entries only; with -H, hard links already name their first entry
/// by its index in the whole tree (an earlier batch's or this one's).
/// `last`: the walk is over (the last batch may hold no entry). Returns
/// false to stop the walk (the transfer it feeds has ended).
using WalkBatchFn = std::function<bool(SourceTree&& batch, bool last)>;

/// Whether scan_sources_streamed hands its entries over in path order with
/// no hard link among them (wire::Offer::ordered): its operands go by name,
/// each directory's entries right after it, by name; -H makes links.
inline bool walks_in_path_order(const ScanOptions& opts) { return !opts.hard_links; }
/// scan_sources' walk, handed over in batches of `batch_entries` as it goes,
/// so the offer's parts leave while later directories are still read
/// (session::TransferSpec::streamed). The result's tree stays empty. On an
/// error (result.error) or a stop, no batch says `last`; "nothing to send"
/// (every PATH skipped) is an error found before any batch.
ScanResult scan_sources_streamed(const std::vector<std::string>& paths, const ScanOptions& opts,
                                 size_t batch_entries, const WalkBatchFn& on_batch);
/// The checks scan_sources makes of the PATHs themselves (a name to arrive
/// under, no two alike, each one there): empty, or the same error. Cheap:
/// the streamed walk's caller runs it before it connects.
std::string check_operands(const std::vector<std::string>& paths);
/// Appends a streamed walk's batch to `tree`.
void append_batch(SourceTree& tree, SourceTree&& batch);

/// Hard links (-H), on a scanned tree: every file entry whose stamp has more
/// than one link and the device and inode of an earlier file entry becomes
/// a link to that first one — size 0, no data ranges, no owner or xattrs of
/// its own (it shares its file's inode), out of total_bytes and
/// file_count's bytes (it still counts as a file). No I/O: it reads the stamps.
void group_hard_links(SourceTree& tree);
inline ScanResult scan_sources(const std::vector<std::string>& paths, bool follow_symlinks = false) {
  return scan_sources(paths, ScanOptions{follow_symlinks, false});
}

/// For the sender's read path, after the last read of a file entry: is it
/// still the file the manifest described? nullopt if its size, mtime and
/// ctime are what the manifest saw; else a sentence saying what changed
/// ("'x' changed while it was sent: it grew from 10 to 20 bytes"). With an
/// fd (the one that was read), fstat of that very file; without, stat of its
/// path, which also sees a file replaced under its name (another inode).
std::optional<std::string> check_unchanged(const SourceTree& tree, size_t entry, int fd);
std::optional<std::string> check_unchanged(const SourceTree& tree, size_t entry);

}  // namespace braid::files
