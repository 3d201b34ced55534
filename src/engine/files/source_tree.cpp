#include "engine/files/source_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "core/wire/data_ranges.hpp"

namespace braid::files {
namespace {

std::string last_component(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  auto slash = p.rfind('/');
  std::string leaf = slash == std::string::npos ? p : p.substr(slash + 1);
  if (leaf.empty() || leaf == "." || leaf == "..") {
    // "." or "dir/..": name it after what it really is.
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) return {};
    std::string r(real);
    std::free(real);
    slash = r.rfind('/');
    leaf = slash == std::string::npos ? r : r.substr(slash + 1);
  }
  return leaf;
}

std::string real_path(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) return path;
  std::string r(real);
  std::free(real);
  return r;
}

const char* kind_of(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  return "not a regular file, directory or symlink";
}

FileStamp stamp_of(const struct stat& st) {
  return FileStamp{static_cast<uint64_t>(st.st_size), stamp_ns(st.st_mtim), stamp_ns(st.st_ctim), st.st_dev, st.st_ino,
                   static_cast<uint32_t>(std::min<nlink_t>(st.st_nlink, UINT32_MAX))};
}

/// The ranges of an open file that hold data, as the file system says
/// (SEEK_DATA / SEEK_HOLE), in the offer's form (wire::data_ranges_to_offer):
/// nullopt when it has no hole, has too many ranges, or the file system
/// cannot tell (then it is sent as plain data).
std::optional<std::vector<wire::DataRange>> find_data_ranges(int fd, uint64_t size) {
  std::vector<wire::DataRange> found;
  off_t at = 0;
  while (static_cast<uint64_t>(at) < size && found.size() <= wire::kMaxDataRanges) {
    const off_t data = ::lseek(fd, at, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // only a hole from here to the end
      return std::nullopt;
    }
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) return std::nullopt;
    if (hole <= data) hole = static_cast<off_t>(size);  // cannot tell: data to the end
    found.push_back(wire::DataRange{static_cast<uint64_t>(data), static_cast<uint64_t>(hole - data)});
    at = hole;
  }
  if (found.size() > wire::kMaxDataRanges) return std::nullopt;
  return wire::data_ranges_to_offer(std::move(found), size);
}

/// Whether this process may read any file whatever its mode
/// (CAP_DAC_READ_SEARCH or CAP_DAC_OVERRIDE in its effective set).
bool reads_any_file() {
  std::FILE* f = std::fopen("/proc/self/status", "re");
  if (!f) return false;
  char line[256];
  unsigned long long caps = 0;
  bool found = false;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "CapEff: %llx", &caps) == 1) {
      found = true;
      break;
    }
  std::fclose(f);
  return found && (caps & ((1ull << 1) | (1ull << 2))) != 0;
}

// Hard links (-H) among `tree`'s entries, which are entries `base`, base + 1,
// … of the whole walk; `first` maps each inode seen to its first entry.
void group_links(SourceTree& tree, size_t base, std::map<std::pair<dev_t, ino_t>, uint32_t>& first) {
  for (size_t i = 0; i < tree.entries.size(); ++i) {
    wire::ManifestEntry& e = tree.entries[i];
    const FileStamp& st = tree.stamps[i];
    if (e.kind != wire::EntryKind::file || st.nlink < 2) continue;
    const auto [at, fresh] = first.emplace(std::make_pair(st.dev, st.ino), static_cast<uint32_t>(base + i));
    if (fresh) continue;
    tree.total_bytes -= std::min(tree.total_bytes, e.size);
    e.size = 0;
    e.data.reset();
    e.owner.reset();
    e.group.reset();
    e.xattrs.reset();
    e.hard_link_to = at->second;
  }
}

class Walker {
 public:
  explicit Walker(const ScanOptions& opts) : opts_(opts) {}
  /// Streamed: every `n` entries go to `fn` (scan_sources_streamed).
  Walker(const ScanOptions& opts, size_t n, const WalkBatchFn& fn) : opts_(opts), batch_n_(n), on_batch_(&fn) {}

  /// false: stop (error() says why). `at`/`name`: the open directory that
  /// holds it and its name there (a walked entry: no path to resolve again
  /// for each call, which a tree of small files pays per file); AT_FDCWD
  /// and `local` for an operand.
  bool add(const std::string& local, const std::string& rel, bool operand, int at = AT_FDCWD,
           const char* name = nullptr) {
    if (!name) name = local.c_str();
    struct stat st {};
    if (::fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      const int e = errno;
      if (operand) return fail("cannot read '" + local + "': " + std::strerror(e));
      return skip(local, e == ENOENT ? "vanished while the tree was read" : std::string("cannot read: ") + std::strerror(e));
    }
    const mode_t lst_mode = st.st_mode;
    std::string open_path = local;
    if (S_ISLNK(st.st_mode) && opts_.follow_symlinks) {
      struct stat target {};
      if (::stat(local.c_str(), &target) != 0) {
        const int e = errno;
        return skip(local, e == ELOOP    ? "a symlink loop (too many levels of links)"
                           : e == ENOENT ? "a broken symlink (its target does not exist)"
                                         : std::string("cannot follow the link: ") + std::strerror(e));
      }
      st = target;
      // Opened later with O_NOFOLLOW on the last component: name the file itself.
      if (S_ISREG(st.st_mode)) open_path = real_path(local);
    }
    wire::ManifestEntry e;
    e.path = rel;
    e.mode = st.st_mode & 07777;
    e.mtime_sec = st.st_mtim.tv_sec;
    e.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
    const MetadataOptions& md = opts_.metadata;
    if (md.owner) e.owner = wire::OwnerId{st.st_uid, md.numeric_ids ? std::string() : names_.user(st.st_uid)};
    if (md.group) e.group = wire::OwnerId{st.st_gid, md.numeric_ids ? std::string() : names_.group(st.st_gid)};
    if (S_ISREG(st.st_mode)) {
      e.kind = wire::EntryKind::file;
      e.size = static_cast<uint64_t>(st.st_size);
      // Fewer blocks than bytes: the file may have holes (or be compressed).
      const bool holes = opts_.sparse && static_cast<uint64_t>(st.st_blocks) * 512 < e.size;
      // Opened now, once, to know it can be: a file braid cannot read is
      // skipped here, not mid-transfer — unless the stat already says so by
      // the kernel's rule (this process owns it and the owner may read, or
      // it may read any file), a tree of small files' third system call each.
      const bool needs_fd = holes || md.xattrs || md.acls;
      if (needs_fd || !((st.st_uid == euid_ && (st.st_mode & S_IRUSR)) || reads_any_)) {
        const bool followed = open_path != local;
        const int fd = ::openat(followed ? AT_FDCWD : at, followed ? open_path.c_str() : name,
                                O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) return skip(local, std::string("cannot open: ") + std::strerror(errno));
        if (holes) e.data = find_data_ranges(fd, e.size);
        std::string why;
        if (md.xattrs || md.acls) e.xattrs = read_xattrs(fd, md, why);
        ::close(fd);
        if (!why.empty()) return skip(local, why);
      }
      out_.total_bytes += e.size;
      ++out_.file_count;
      return push(std::move(e), open_path, st);
    }
    if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = ::readlinkat(at, name, target.data(), target.size());
      if (n < 0) return skip(local, std::string("cannot read the link: ") + std::strerror(errno));
      target.resize(static_cast<size_t>(n));
      e.kind = wire::EntryKind::symlink;
      e.link_target = std::move(target);
      return push(std::move(e), local, st);
    }
    if (S_ISDIR(st.st_mode)) {
      for (const auto& [where, id] : ancestors_)
        if (id.first == st.st_dev && id.second == st.st_ino)
          return skip(local, "a symlink loop: it leads back to '" + where + "', which contains it");
      // An operand and a followed link to a directory are opened as
      // opendir would; a walked directory by its name in its parent, never
      // through a link.
      const int dfd = at == AT_FDCWD || S_ISLNK(lst_mode)
                          ? ::open(local.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                          : ::openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      DIR* d = dfd < 0 ? nullptr : ::fdopendir(dfd);
      if (!d) {
        const int e = errno;
        if (dfd >= 0) ::close(dfd);
        return skip(local, std::string("cannot list: ") + std::strerror(e));
      }
      e.kind = wire::EntryKind::directory;
      std::string why;
      if (md.xattrs || md.acls) e.xattrs = read_xattrs(::dirfd(d), md, why);
      if (!why.empty()) {
        ::closedir(d);
        return skip(local, why);
      }
      if (!push(std::move(e), local, st)) {
        ::closedir(d);
        return false;
      }
      ancestors_.emplace_back(local, std::make_pair(st.st_dev, st.st_ino));
      const bool ok = walk_dir(d, local, rel);
      ancestors_.pop_back();
      return ok;
    }
    return skip(local, kind_of(st.st_mode));
  }

  ScanResult take() {
    ScanResult r;
    r.tree = std::move(out_);
    r.skipped = std::move(skipped_);
    return r;
  }
  const std::string& error() const { return error_; }

 private:
  /// Lists `d`, then adds its entries by name while it stays open (one
  /// open directory per level of the tree).
  bool walk_dir(DIR* d, const std::string& local, const std::string& rel) {
    std::vector<std::string> names;
    while (dirent* de = ::readdir(d)) {
      std::string n = de->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    std::sort(names.begin(), names.end());
    const int fd = ::dirfd(d);
    bool ok = true;
    for (const auto& n : names)
      if (!(ok = add(local + "/" + n, rel + "/" + n, false, fd, n.c_str()))) break;
    ::closedir(d);
    return ok;
  }

  /// false: the streamed walk was stopped.
  bool push(wire::ManifestEntry e, const std::string& local, const struct stat& st) {
    // Both ends name entries by 32-bit indices (files::FileLayout), and a
    // receiver refuses an offer of more.
    if (walked() >= wire::kMaxOfferEntries)
      return fail("more than " + std::to_string(wire::kMaxOfferEntries) + " entries to send: send the tree in several parts");
    out_.entries.push_back(std::move(e));
    out_.local_paths.push(local, out_.entries.back().path);
    out_.stamps.push_back(stamp_of(st));
    if (on_batch_ && out_.entries.size() >= batch_n_) return flush(false);
    return true;
  }

 public:
  /// Streamed: hands what was walked since the last batch over.
  bool flush(bool last) {
    if (opts_.hard_links) group_links(out_, emitted_, first_links_);
    emitted_ += out_.entries.size();
    SourceTree batch = std::move(out_);
    out_ = SourceTree{};
    if ((*on_batch_)(std::move(batch), last)) return true;
    stopped_ = true;
    return fail("the transfer ended before the walk");
  }
  size_t walked() const { return emitted_ + out_.entries.size(); }
  bool stopped() const { return stopped_; }
  const std::vector<SkippedSource>& skipped() const { return skipped_; }
  std::vector<SkippedSource> take_skipped() { return std::move(skipped_); }

 private:

  bool skip(const std::string& local, std::string reason) {
    if (opts_.strict) return fail("'" + local + "': " + reason + " (--strict-sources: nothing is sent)");
    skipped_.push_back(SkippedSource{local, std::move(reason)});
    return true;
  }

  bool fail(std::string msg) {
    error_ = std::move(msg);
    return false;
  }

  ScanOptions opts_;
  size_t batch_n_ = 0;
  const WalkBatchFn* on_batch_ = nullptr;
  size_t emitted_ = 0;  // entries handed over in earlier batches
  std::map<std::pair<dev_t, ino_t>, uint32_t> first_links_;
  bool stopped_ = false;
  uid_t euid_ = ::geteuid();
  bool reads_any_ = reads_any_file();
  SourceTree out_;
  std::vector<SkippedSource> skipped_;
  std::vector<std::pair<std::string, std::pair<dev_t, ino_t>>> ancestors_;  // the directories being walked
  IdNames names_;
  std::string error_;
};

std::optional<std::string> compare(const SourceTree& tree, size_t entry, const struct stat& now, bool by_path) {
  const FileStamp& was = tree.stamp(entry);
  const std::string name = "'" + tree.local_path(entry) + "' changed while it was sent: ";
  if (by_path && (now.st_ino != was.ino || now.st_dev != was.dev)) return name + "another file now stands under its name";
  const uint64_t size = static_cast<uint64_t>(now.st_size);
  if (size > was.size) return name + "it grew from " + std::to_string(was.size) + " to " + std::to_string(size) + " bytes";
  if (size < was.size)
    return name + "it shrank from " + std::to_string(was.size) + " to " + std::to_string(size) + " bytes";
  if (stamp_ns(now.st_mtim) != was.mtime_ns) return name + "its modification time changed (it was written to)";
  if (stamp_ns(now.st_ctim) != was.ctime_ns) return name + "its change time changed (written to, or its metadata changed)";
  return std::nullopt;
}

/// The operands in the order of the names they arrive under (each names
/// one: check_operands), so that a walk is in path order (walks_in_path_order).
std::vector<std::string> by_name(std::vector<std::string> paths) {
  std::stable_sort(paths.begin(), paths.end(),
                   [](const std::string& a, const std::string& b) { return last_component(a) < last_component(b); });
  return paths;
}

}  // namespace

ScanResult scan_sources(const std::vector<std::string>& paths, const ScanOptions& opts) {
  Walker w(opts);
  std::set<std::string> tops;
  for (const auto& p : by_name(paths)) {
    std::string leaf = last_component(p);
    if (leaf.empty() || leaf == "/") return {{}, {}, "cannot send '" + p + "': it has no name to arrive under"};
    if (!tops.insert(leaf).second)
      return {{}, {}, "two PATHs would arrive under the same name '" + leaf + "'; send them separately"};
    if (!w.add(p, leaf, true)) return {{}, {}, w.error()};
  }
  ScanResult r = w.take();
  if (opts.hard_links) group_hard_links(r.tree);
  if (r.tree.entries.empty() && !r.skipped.empty())
    r.error = "nothing to send: every PATH was skipped ('" + r.skipped.front().path + "': " + r.skipped.front().reason + ")";
  return r;
}

ScanResult scan_sources_streamed(const std::vector<std::string>& paths, const ScanOptions& opts,
                                 size_t batch_entries, const WalkBatchFn& on_batch) {
  if (auto e = check_operands(paths); !e.empty()) return {{}, {}, e};
  Walker w(opts, std::max<size_t>(batch_entries, 1), on_batch);
  for (const auto& p : by_name(paths))
    if (!w.add(p, last_component(p), true)) return {{}, w.take_skipped(), w.error()};
  if (w.walked() == 0 && !w.skipped().empty())
    return {{}, {}, "nothing to send: every PATH was skipped ('" + w.skipped().front().path + "': " +
                        w.skipped().front().reason + ")"};
  if (!w.flush(true)) return {{}, w.take_skipped(), w.error()};
  return {{}, w.take_skipped(), {}};
}

std::string check_operands(const std::vector<std::string>& paths) {
  std::set<std::string> tops;
  for (const auto& p : paths) {
    std::string leaf = last_component(p);
    if (leaf.empty() || leaf == "/") return "cannot send '" + p + "': it has no name to arrive under";
    if (!tops.insert(leaf).second)
      return "two PATHs would arrive under the same name '" + leaf + "'; send them separately";
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return "cannot read '" + p + "': " + std::strerror(errno);
  }
  return {};
}

void LocalPaths::push(const std::string& local, const std::string& rel) {
  const bool under_prefix = local.size() >= rel.size() && local.compare(local.size() - rel.size(), rel.size(), rel) == 0;
  if (!under_prefix) {
    elsewhere_.push_back({count_, local});
  } else {
    const std::string_view prefix(local.data(), local.size() - rel.size());
    if (prefixes_.empty() || prefixes_.back().text != prefix) prefixes_.push_back({count_, std::string(prefix)});
  }
  ++count_;
}

std::string LocalPaths::of(size_t i, const std::string& rel) const {
  const auto by_entry = [](const Kept& k, size_t at) { return k.entry < at; };
  const auto e = std::lower_bound(elsewhere_.begin(), elsewhere_.end(), i, by_entry);
  if (e != elsewhere_.end() && e->entry == i) return e->text;
  // The last prefix that starts at or before i.
  auto p = std::lower_bound(prefixes_.begin(), prefixes_.end(), i + 1, by_entry);
  if (p == prefixes_.begin()) return rel;  // cannot be: every entry is under a prefix or elsewhere
  return std::prev(p)->text + rel;
}

void LocalPaths::release_before(size_t entry) {
  const auto by_entry = [](const Kept& k, size_t at) { return k.entry < at; };
  elsewhere_.erase(elsewhere_.begin(), std::lower_bound(elsewhere_.begin(), elsewhere_.end(), entry, by_entry));
  // The prefix that holds `entry` stays: the last one starting at or before it.
  auto p = std::lower_bound(prefixes_.begin(), prefixes_.end(), entry + 1, by_entry);
  if (p != prefixes_.begin()) prefixes_.erase(prefixes_.begin(), std::prev(p));
}

void LocalPaths::append(LocalPaths&& more) {
  for (auto& k : more.prefixes_)
    if (prefixes_.empty() || prefixes_.back().text != k.text) prefixes_.push_back({count_ + k.entry, std::move(k.text)});
  for (auto& k : more.elsewhere_) elsewhere_.push_back({count_ + k.entry, std::move(k.text)});
  count_ += more.count_;
}

void append_batch(SourceTree& tree, SourceTree&& batch) {
  tree.entries.insert(tree.entries.end(), std::make_move_iterator(batch.entries.begin()),
                      std::make_move_iterator(batch.entries.end()));
  tree.local_paths.append(std::move(batch.local_paths));
  tree.stamps.insert(tree.stamps.end(), batch.stamps.begin(), batch.stamps.end());
  tree.total_bytes += batch.total_bytes;
  tree.file_count += batch.file_count;
}

bool SourceTree::lets_go_at(size_t i) const {
  i = std::min(i, size());
  if (i <= first) return false;
  const size_t gone = i - first;
  // Erasing a front moves what stays: done once as many have gone as stay
  // (or a batch of 65,536), so each entry moves O(1) times on average. The
  // vectors' capacity stays what the window needed at most.
  return gone >= entries.size() - gone || gone >= 65536;
}

void SourceTree::release_before(size_t i) {
  if (!lets_go_at(i)) return;
  i = std::min(i, size());
  const size_t gone = i - first;
  for (size_t k = 0; k < gone; ++k)
    if (entries[k].kind == wire::EntryKind::file) released_hole_bytes += entries[k].size - entries[k].data_bytes();
  entries.erase(entries.begin(), entries.begin() + static_cast<ptrdiff_t>(gone));
  stamps.erase(stamps.begin(), stamps.begin() + static_cast<ptrdiff_t>(gone));
  local_paths.release_before(i);
  first = i;
}

void group_hard_links(SourceTree& tree) {
  std::map<std::pair<dev_t, ino_t>, uint32_t> first;
  group_links(tree, 0, first);
}

std::optional<std::string> check_unchanged(const SourceTree& tree, size_t entry, int fd) {
  if (entry < tree.first || entry >= tree.size()) return "internal error: no manifest entry " + std::to_string(entry);
  struct stat now {};
  if (::fstat(fd, &now) != 0)
    return "'" + tree.local_path(entry) + "' can no longer be examined: " + std::strerror(errno);
  return compare(tree, entry, now, false);
}

std::optional<std::string> check_unchanged(const SourceTree& tree, size_t entry) {
  if (entry < tree.first || entry >= tree.size()) return "internal error: no manifest entry " + std::to_string(entry);
  struct stat now {};
  if (::stat(tree.local_path(entry).c_str(), &now) != 0)
    return "'" + tree.local_path(entry) + "' changed while it was sent: it can no longer be found (" +
           std::strerror(errno) + ")";
  return compare(tree, entry, now, true);
}

}  // namespace braid::files
