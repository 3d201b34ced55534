#include "engine/files/receive_tree.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <system_error>
#include <thread>
#include <variant>

#include "core/units_parse.hpp"

namespace braid::files {
namespace {

using security::RelativePath;

std::string parent_of(const RelativePath& p) {
  const auto& c = p.components();
  std::string out;
  for (size_t i = 0; i + 1 < c.size(); ++i) {
    if (!out.empty()) out += '/';
    out += c[i];
  }
  return out;
}

std::string errno_text(int e) { return std::strerror(e); }

std::string leaf_of(const std::string& p) { return p.substr(p.rfind('/') + 1); }  // npos + 1 == 0: a top-level name whole

/// `path` lies beneath the directory `dir` (both relative, canonical).
bool is_beneath(const std::string& path, const std::string& dir) {
  return path.size() > dir.size() && path[dir.size()] == '/' && path.compare(0, dir.size(), dir) == 0;
}

/// From this many files, prepare and finalize work on several directories
/// at once, with up to kMaxFileThreads threads (more would wait on the
/// file system's own locks; docs/benchmarks.md "Trees of small files").
constexpr size_t kParallelFrom = 256;
constexpr size_t kMaxFileThreads = 4;

bool is_no_space(int e) { return e == ENOSPC || e == EDQUOT; }

/// The process's umask as /proc says it (reading it with umask(2) would
/// change it for a moment under other threads); 0777 if it cannot tell.
mode_t process_umask() {
  std::FILE* f = std::fopen("/proc/self/status", "re");
  if (!f) return 0777;
  char line[256];
  unsigned int mask = 0777;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "Umask: %o", &mask) == 1) break;
  std::fclose(f);
  return static_cast<mode_t>(mask);
}

/// A directory that cannot be made or opened: the offer's fault when its
/// path leads through a symlink, outside or through a non-directory; else
/// the target's.
wire::RefuseReason refuse_reason_for(security::Errc code) {
  const bool path_problem = code == security::Errc::path_symlink || code == security::Errc::path_escapes ||
                            code == security::Errc::path_not_directory || code == security::Errc::path_invalid;
  return path_problem ? wire::RefuseReason::bad_path : wire::RefuseReason::not_writable;
}

/// Free bytes in the target: the caller's figure if it has one, else the
/// file system's; nullopt if neither can tell.
std::optional<uint64_t> free_space(int root_fd, const PrepareOptions& opts) {
  if (opts.free_space) return opts.free_space;
  struct statvfs vfs {};
  if (::fstatvfs(root_fd, &vfs) != 0) return std::nullopt;
  return static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

wire::RefuseReason reason_for_errno(int e) {
  if (is_no_space(e)) return wire::RefuseReason::no_space;
  return wire::RefuseReason::not_writable;
}

}  // namespace

DirCache::Fd DirCache::get(const std::string& parent, bool create, std::string& error, security::Errc* code,
                          mode_t create_mode) {
  {
    std::lock_guard lock(mu_);
    if (auto it = open_.find(parent); it != open_.end()) return it->second;
  }
  security::UniqueFd fd;
  if (parent.empty()) {
    fd = security::UniqueFd(::fcntl(root_fd_, F_DUPFD_CLOEXEC, 0));
    if (!fd.valid()) {
      error = "cannot open the target directory: " + errno_text(errno);
      if (code) *code = security::Errc::io_error;
      return nullptr;
    }
  } else {
    auto rel = RelativePath::parse(parent);
    if (!rel) {
      error = rel.error().message;
      if (code) *code = rel.error().code;
      return nullptr;
    }
    auto opened = create ? security::make_dirs_beneath(root_fd_, rel.value(), create_mode)
                         : security::open_beneath(root_fd_, rel.value(), O_RDONLY | O_DIRECTORY);
    if (!opened) {
      error = opened.error().message;
      if (code) *code = opened.error().code;
      return nullptr;
    }
    fd = std::move(opened.value());
  }
  auto shared = std::make_shared<security::UniqueFd>(std::move(fd));
  std::lock_guard lock(mu_);
  if (auto it = open_.find(parent); it != open_.end()) return it->second;  // another thread won
  if (open_.size() >= capacity_) open_.erase(open_.begin());
  open_.emplace(parent, shared);
  return shared;
}

void DirCache::clear() {
  std::lock_guard lock(mu_);
  open_.clear();
}

ReceiveTree::ReceiveTree(int root_fd, std::shared_ptr<const wire::Offer> offer, std::string tag)
    : root_fd_(root_fd),
      offer_(std::move(offer)),
      tag_(std::move(tag)),
      layout_(offer_->entries),
      dirs_(root_fd, 64),
      umask_(process_umask()),
      fds_(256, [this](size_t entry, std::string& error) { return open_temp(entry, error); }) {
  // The entries' slots are made by prepare, which finds their directories.
  size_t files = 0;
  for (const auto& e : offer_->entries) files += e.kind == wire::EntryKind::file;
  total_ = layout_.total();
  entry_count_ = offer_->entries.size();
  file_count_ = files;
}

security::UniqueFd ReceiveTree::open_temp(size_t entry, std::string& error) {
  auto dir = parent_dir(entry, false, error);
  if (!dir) return security::UniqueFd();
  // A temporary file not made at prepare is made by the first thread that
  // needs it; another one that needs it meanwhile waits for it.
  {
    auto& state = slot(entry).create_state;
    for (uint8_t now = state.load(); now != kCreated; now = state.load()) {
      if (now == kCreating) {
        state.wait(kCreating);
        continue;
      }
      uint8_t expected = kToCreate;
      if (!state.compare_exchange_strong(expected, kCreating)) continue;
      security::UniqueFd fd = create_temp(dir->get(), entry, error);
      state.store(fd.valid() ? kCreated : kToCreate);
      state.notify_all();
      return fd;
    }
  }
  // One name in a directory opened beneath the target: O_NOFOLLOW
  // keeps a link planted under the temporary name from being followed.
  security::UniqueFd fd(::openat(dir->get(), temp_leaf(entry).c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) error = "cannot open '" + security::printable_path(temp_path(entry)) + "': " + errno_text(errno);
  return fd;
}

security::UniqueFd ReceiveTree::create_temp(int dir, size_t i, std::string& error) {
  const auto& e = entry(i);
  // Bytes an older run left under this name are worth nothing here (no
  // resume): start from an empty file.
  security::UniqueFd fd(::openat(dir, temp_leaf(i).c_str(), O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    error = "cannot create '" + security::printable_path(temp_path(i)) + "': " + errno_text(errno);
    return fd;
  }
  // At its full size from the start, as a resume expects to find it (and
  // a sparse file's holes are never written).
  if (e.size > 0 && ::ftruncate(fd.get(), static_cast<off_t>(e.size)) != 0) {
    error = "cannot size '" + security::printable_path(temp_path(i)) + "': " + errno_text(errno);
    return security::UniqueFd();
  }
  set_final_mode(fd.get(), i);
  return fd;
}

void ReceiveTree::set_final_mode(int fd, size_t i) {
  // Its final permission bits now, on the fd at hand, when they let us go on
  // writing it (owner read and write, no set-id bit, which a write would
  // clear): finalize then need not open it again (Slot::mode_set). Others see no
  // more of it than they will of the finished file.
  const mode_t mode = entry(i).mode & 07777;
  if ((mode & 0600) == 0600 && (mode & 07000) == 0 && ::fchmod(fd, mode) == 0) slot(i).mode_set = 1;
}

std::string ReceiveTree::temp_leaf(size_t entry) const {
  if (slot(entry).staged == kInStaged) return leaf(entry);
  return ".braid-" + tag_ + "-" + std::to_string(entry) + ".part";
}

DirCache::Fd ReceiveTree::parent_dir(size_t entry, bool create, std::string& error, security::Errc* code) {
  return dirs_.get(disk_parent(entry), create, error, code);
}

std::string ReceiveTree::temp_path(size_t entry) const {
  const std::string& parent = disk_parent(entry);
  return parent.empty() ? temp_leaf(entry) : parent + "/" + temp_leaf(entry);
}

std::string ReceiveTree::disk_path(size_t entry) const {
  const std::string name = slot(entry).staged == kStageRoot ? ".braid-" + tag_ + "-" + std::to_string(entry) + ".dir"
                                                        : leaf(entry);
  const std::string& parent = disk_parent(entry);
  return parent.empty() ? name : parent + "/" + name;
}

void ReceiveTree::plan_staging(size_t files) {
  if (files < kStageFrom) return;
  // Parents before their children: by depth.
  std::vector<size_t> dirs;
  for (size_t i = 0; i < slots_.size(); ++i)
    if (entry(i).kind == wire::EntryKind::directory) dirs.push_back(i);
  std::stable_sort(dirs.begin(), dirs.end(), [&](size_t a, size_t b) {
    return std::count(entry(a).path.begin(), entry(a).path.end(), '/') <
           std::count(entry(b).path.begin(), entry(b).path.end(), '/');
  });
  std::unordered_map<std::string, std::string> staged;  // a staged directory's path → where it is on disk
  for (size_t k : dirs) {
    if (auto it = staged.find(parent(k)); it != staged.end()) {
      staged.emplace(entry(k).path, it->second + "/" + leaf(k));
      continue;
    }
    // Outside any staged directory: staged when nothing stands at its place
    // yet (then nothing in it can be kept, replaced or clash with the offer).
    auto where = security::open_parent_beneath(root_fd_, rel(k), false);
    if (!where) continue;  // its parent is not there yet: made as usual
    struct stat st {};
    if (::fstatat(where.value().dir.get(), where.value().leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
      continue;
    slot(k).staged = kStageRoot;
    stage_roots_.push_back(StageRoot{k, disk_path(k)});
    staged.emplace(entry(k).path, stage_roots_.back().disk_path);
  }
  if (stage_roots_.empty()) return;
  for (auto& [name, place] : places_)
    if (auto it = staged.find(name); it != staged.end()) {
      place.disk = it->second;
      place.staged = true;
    }
  slots_.for_each([](size_t, Slot& s) {
    if (s.dir->second.staged) s.staged = kInStaged;
  });
}

std::variant<std::unique_ptr<ReceiveTree>, PrepareError> ReceiveTree::prepare(int root_fd,
                                                                             std::shared_ptr<const wire::Offer> shared,
                                                                             const PrepareOptions& opts) {
  const wire::Offer& offer = *shared;
  if (opts.tag.empty() || opts.tag.find_first_not_of("0123456789abcdef") != std::string::npos)
    return PrepareError{wire::RefuseReason::bad_offer, "internal error: a temporary-file tag must be hex digits"};
  std::unique_ptr<ReceiveTree> t(new ReceiveTree(root_fd, std::move(shared), opts.tag));
  // 1. Every path must be a clean relative path, unique, and every parent
  //    that the offer itself names must be a directory of the offer.
  // Names as indices of the tree's own entries (parse accepts only the
  // canonical form, so an entry's path is its RelativePath's str()): no
  // second copy of every path, even for the checks. (The offer has at most
  // kMaxOfferEntries entries: its indices fit in 32 bits.)
  PathIndex seen;
  const auto path_of = [&offer](uint32_t i) -> std::string_view { return offer.entries[i].path; };
  seen.reserve(offer.entries.size(), path_of);
  for (size_t i = 0; i < offer.entries.size(); ++i) {
    const auto& e = offer.entries[i];
    auto p = RelativePath::parse(e.path);
    if (!p)
      return PrepareError{wire::RefuseReason::bad_path,
                          "refused a path from the sender: '" + security::printable_path(e.path) + "': " + p.error().message};
    if (!seen.insert(static_cast<uint32_t>(i), e.path, path_of))
      return PrepareError{wire::RefuseReason::bad_offer,
                          "the offer names '" + security::printable_path(e.path) + "' twice"};
    Dir& dir = *t->places_.try_emplace(parent_of(p.value())).first;
    dir.second.disk = dir.first;  // until plan_staging
    t->add_slot(e, &dir);
  }
  for (const auto& e : offer.entries) {
    const std::string_view path = e.path;
    for (size_t slash = path.find('/'); slash != std::string_view::npos; slash = path.find('/', slash + 1)) {
      const std::string_view prefix = path.substr(0, slash);
      if (const auto at = seen.find(prefix, path_of); at && offer.entries[*at].kind != wire::EntryKind::directory)
        return PrepareError{wire::RefuseReason::bad_offer, "the offer puts '" + security::printable_path(e.path) +
                                                               "' beneath '" + security::printable_path(prefix) +
                                                               "', which it does not send as a directory"};
    }
  }
  // 2. Which links are created (--links).
  t->decide_links(opts.links);
  // 3. Room for the data.
  if (const auto free = free_space(root_fd, opts)) {
    const uint64_t avail = *free;
    // Holes of sparse files take no room: only data is written.
    const uint64_t data = offer.data_bytes();
    const uint64_t needed = data - std::min(opts.bytes_present, data);
    if (avail < needed)
      return PrepareError{wire::RefuseReason::no_space,
                          "not enough space in the target directory: " + format_size(Bytes(data)) +
                              (data < offer.total_bytes() ? " of data" : "") + " offered" +
                              (opts.bytes_present ? " (" + format_size(Bytes(opts.bytes_present)) + " already here)" : "") +
                              ", " + format_size(Bytes(avail)) + " available"};
  }
  for (size_t i = 0; i < opts.keep.size() && i < offer.entries.size(); ++i) t->slot(i).keep = opts.keep[i];
  for (size_t i = 0; i < opts.refresh.size() && i < offer.entries.size(); ++i) t->slot(i).refresh = opts.refresh[i];
  t->backup_ = opts.backup;
  size_t files = 0;
  for (const auto& e : offer.entries) files += e.kind == wire::EntryKind::file;
  t->plan_staging(files);
  if (auto err = t->create_all(opts.keep_parts)) return *err;
  return t;
}

void ReceiveTree::decide_links(LinkPolicy policy) {
  skipped_links_.clear();
  std::set<std::string> links;
  slots_.for_each([&](size_t, Slot& s) {
    s.link_skipped = false;
    if (s.entry->kind == wire::EntryKind::symlink) links.insert(s.entry->path);
  });
  // Every link is held: none is forgotten (release_written).
  slots_.for_each([&](size_t i, Slot& s) {
    const auto& e = *s.entry;
    if (e.kind != wire::EntryKind::symlink || policy == LinkPolicy::keep) return;
    std::string why = policy == LinkPolicy::skip ? "links are not created (--links skip)"
                                                 : unsafe_link_reason(rel(i), e.link_target.str(), links);
    if (why.empty()) return;
    s.link_skipped = true;
    skipped_links_.push_back(SkippedLink{i, e.path, e.link_target, std::move(why)});
  });
}

std::optional<PrepareError> ReceiveTree::create_all(bool keep_parts) {
  kept_.assign(slots_.size(), 0);
  found_.assign(slots_.size(), -1);
  std::vector<size_t> files;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const auto& e = entry(i);
    if (e.kind == wire::EntryKind::directory) {
      if (auto err = make_directory(i)) return err;
      continue;
    }
    if (e.kind == wire::EntryKind::file && !slot(i).keep) files.push_back(i);
  }
  // With keep_parts every temporary file is made here, and the slots stay
  // as they were made: created, nothing counted.
  if (!keep_parts) {
    for (size_t i : files) slot(i).create_state = kToCreate;
    for (size_t i = 0; i < slots_.size(); ++i) {
      const auto& e = entry(i);
      const bool writes = e.kind == wire::EntryKind::file && !slot(i).keep && !e.hard_link_to && e.size > 0;
      slot(i).unwritten = writes ? static_cast<int64_t>(e.size) : -1;
    }
  }
  return create_files(files, keep_parts);
}

std::optional<PrepareError> ReceiveTree::make_directory(size_t i) {
  auto where = RelativePath::parse(disk_path(i));
  if (!where) return PrepareError{wire::RefuseReason::bad_path, where.error().message};
  auto d = security::make_dirs_beneath(root_fd_, where.value(), 0700);
  if (!d) return PrepareError{refuse_reason_for(d.error().code), d.error().message};
  return std::nullopt;
}

std::optional<PrepareError> ReceiveTree::create_files(const std::vector<size_t>& files, bool keep_parts) {
  std::mutex mu;
  std::optional<PrepareError> first_error;
  for_each_directory(files, [&](size_t i) {
    auto err = create_file(i, keep_parts);
    if (!err) return true;
    std::lock_guard lock(mu);
    if (!first_error) first_error = std::move(err);
    return false;
  });
  return first_error;
}

std::optional<PrepareError> ReceiveTree::create_file(size_t i, bool keep_parts) {
  const auto& e = entry(i);
  std::string error;
  security::Errc code = security::Errc::io_error;
  auto parent = parent_dir(i, /*create=*/true, error, &code);
  if (!parent) return PrepareError{refuse_reason_for(code), error};
  const int dir = parent->get();
  // The final name must not be a directory or a symlink we would replace
  // blindly (in a staged directory nothing stands but what this offer made).
  struct stat st {};
  if (slot(i).staged != kInStaged && ::fstatat(dir, leaf(i).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
    return PrepareError{wire::RefuseReason::bad_offer,
                        "'" + security::printable_path(entry(i).path) + "' exists as a directory in the target"};
  if (e.hard_link_to) return std::nullopt;  // no bytes of its own: linked to its file in finalize
  // Without a resume, the file is made when its first bytes come (or at
  // finalize, for an empty one): creating a tree's files overlaps its
  // transfer instead of coming before it.
  if (!keep_parts) return std::nullopt;
  const std::string tmp = temp_leaf(i);
  // What an earlier run left, before this one makes it the file's size.
  struct stat before {};
  if (::fstatat(dir, tmp.c_str(), &before, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(before.st_mode))
    found_[i] = static_cast<int64_t>(before.st_size);
  security::UniqueFd fd(::openat(dir, tmp.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) {
    const int err = errno;
    return PrepareError{reason_for_errno(err),
                        "cannot create '" + security::printable_path(temp_path(i)) + "': " + errno_text(err)};
  }
  struct stat part {};
  kept_[i] = ::fstat(fd.get(), &part) == 0 && S_ISREG(part.st_mode) && static_cast<uint64_t>(part.st_size) == e.size;
  if (::ftruncate(fd.get(), static_cast<off_t>(e.size)) != 0) {
    const int err = errno;
    return PrepareError{reason_for_errno(err), "cannot size '" + security::printable_path(temp_path(i)) +
                                                   "': " + errno_text(err)};
  }
  set_final_mode(fd.get(), i);
  return std::nullopt;
}

template <class Work>
void ReceiveTree::for_each_directory(const std::vector<size_t>& entries, Work work) {
  // Runs of entries in one directory: creating or renaming in a directory
  // takes its lock, so runs go to different threads, a run to one thread.
  std::vector<std::pair<size_t, size_t>> runs;  // [first, last) in `entries`
  for (size_t k = 0; k < entries.size(); ++k)
    if (runs.empty() || slot(entries[k]).dir != slot(entries[runs.back().second - 1]).dir) runs.push_back({k, k + 1});
    else runs.back().second = k + 1;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto worker = [&] {
    for (size_t r; !stop.load(std::memory_order_relaxed) && (r = next.fetch_add(1)) < runs.size();)
      for (size_t k = runs[r].first; k < runs[r].second; ++k)
        if (!work(entries[k])) {
          stop = true;
          return;
        }
  };
  const size_t threads =
      entries.size() < kParallelFrom ? 1 : std::min<size_t>({kMaxFileThreads, runs.size(), std::max(1u, std::thread::hardware_concurrency())});
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // no thread to be had: fewer do it
    }
  }
  worker();
  for (auto& h : helpers) h.join();
}

int ReceiveTree::write_whole(const Extent& x, const uint8_t* p) {
  const auto& e = entry(x.entry);
  std::string error;
  auto dir = parent_dir(x.entry, false, error);
  if (!dir) return EIO;
  // Made with its final mode when the umask leaves it as it is (else 0600,
  // then fchmod); O_EXCL, so a file an older run left is never taken for
  // new — that one is cut to nothing and chmodded instead.
  const mode_t mode = e.mode & 07777;
  bool exact = (mode & 0600) == 0600 && (mode & 07000) == 0 && (mode & umask_) == 0;
  const std::string leaf = temp_leaf(x.entry);
  security::UniqueFd fd(::openat(dir->get(), leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                 exact ? mode : 0600));
  if (!fd.valid() && errno == EEXIST) {
    exact = false;
    fd = security::UniqueFd(::openat(dir->get(), leaf.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  }
  if (!fd.valid()) return errno;
  for (uint64_t left = x.length, at = 0; left > 0;) {
    const ssize_t n = ::pwrite(fd.get(), p + at, left, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0 ? ENOSPC : errno;
    at += static_cast<uint64_t>(n);
    left -= static_cast<uint64_t>(n);
  }
  if (exact) slot(x.entry).mode_set = 1;
  else set_final_mode(fd.get(), x.entry);
  if (slot(x.entry).unwritten.fetch_sub(static_cast<int64_t>(x.length)) == static_cast<int64_t>(x.length)) {
    const timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)}, {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
    if (::futimens(fd.get(), times) != 0) slot(x.entry).unwritten = -1;  // finalize tries again
  }
  return 0;
}

int ReceiveTree::write(uint64_t offset, std::span<const uint8_t> data) {
  std::shared_lock seal(sealing_);
  if (sealed_) return 0;
  // The files of entries let go (release_written) are whole on disk, every
  // byte verified: a later copy of those bytes has nothing to add.
  if (const uint64_t from = layout_.held_from(); offset < from) {
    const size_t gone = static_cast<size_t>(std::min<uint64_t>(from - offset, data.size()));
    offset += gone;
    data = data.subspan(gone);
    if (data.empty()) return 0;
  }
  int result = 0;
  const bool ok = layout_.for_each(offset, data.size(), [&](const Extent& x) {
    if (x.entry < slots_.base()) return true;  // let go, as above (the layout lets go of its front in steps)
    Slot& s = *slots_.find(x.entry);
    const auto& e = *s.entry;
    // A whole file in this one write (a tree of small files): made, written
    // and closed here — four system calls, no cached fd to keep.
    if (x.file_offset == 0 && x.length == e.size && !e.data) {
      auto& state = s.create_state;
      uint8_t expected = kToCreate;
      if (state.compare_exchange_strong(expected, kCreating)) {
        const int r = write_whole(x, data.data() + (x.transfer_offset - offset));
        state.store(r == 0 ? kCreated : kToCreate);
        state.notify_all();
        if (r != 0) result = r;
        return r == 0;
      }
    }
    std::string error;
    auto fd = fds_.get(x.entry, error);
    if (!fd) {
      result = EIO;
      return false;
    }
    const uint8_t* p = data.data() + (x.transfer_offset - offset);
    uint64_t left = x.length;
    off_t at = static_cast<off_t>(x.file_offset);
    while (left > 0) {
      ssize_t n = ::pwrite(fd->get(), p, left, at);
      if (n < 0) {
        if (errno == EINTR) continue;
        result = errno;
        return false;
      }
      if (n == 0) {
        result = ENOSPC;
        return false;
      }
      p += n;
      at += n;
      left -= static_cast<uint64_t>(n);
    }
    // Its last byte (every write of it done before its count came off):
    // the file is whole, its mtime can be set now rather than at finalize.
    // (With keep_parts the count starts at -1 and never comes to 0.)
    if (s.unwritten.fetch_sub(static_cast<int64_t>(x.length)) == static_cast<int64_t>(x.length)) {
      const timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)}, {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
      if (::futimens(fd->get(), times) != 0) s.unwritten = -1;  // finalize tries again
    }
    return true;
  });
  if (!ok && result == 0) result = EINVAL;  // range outside the transfer
  return result;
}

int ReceiveTree::read(uint64_t offset, std::span<uint8_t> out) {
  std::shared_lock grow(sealing_);  // no entry goes while it is read (release_written)
  int result = 0;
  const bool ok = layout_.for_each(offset, out.size(), [&](const Extent& x) {
    if (!held(x.entry)) {
      result = EINVAL;  // forgotten (release_written: never with keep_parts, which resume reads back)
      return false;
    }
    std::string error;
    auto fd = fds_.get(x.entry, error);
    if (!fd) {
      result = EIO;
      return false;
    }
    uint8_t* p = out.data() + (x.transfer_offset - offset);
    uint64_t left = x.length;
    off_t at = static_cast<off_t>(x.file_offset);
    while (left > 0) {
      const ssize_t n = ::pread(fd->get(), p, left, at);
      if (n < 0) {
        if (errno == EINTR) continue;
        result = errno;
        return false;
      }
      if (n == 0) {  // shorter than the file it stands for: someone cut it meanwhile
        result = ENODATA;
        return false;
      }
      p += n;
      at += n;
      left -= static_cast<uint64_t>(n);
    }
    return true;
  });
  if (!ok && result == 0) result = EINVAL;
  return result;
}

int ReceiveTree::sync_files(const std::set<size_t>& entries) {
  // Many files (a resume journal's batch of small files: 32,768 of 4 KiB in
  // 128 MiB): one syncfs, not an fdatasync each — on ext4 each of those is
  // a journal commit and a disk flush, which made a million files take hours.
  bool any_forgotten = false;
  if (entries.size() <= kSyncEachFileUpTo) {
    std::shared_lock grow(sealing_);
    for (size_t entry : entries) any_forgotten |= !held(entry);
  }
  // A file forgotten has no name here any more (release_written): the file system's sync, once.
  if (entries.size() > kSyncEachFileUpTo || any_forgotten) return ::syncfs(root_fd_) == 0 ? 0 : errno;
  for (size_t entry : entries)
    if (const int err = sync_file(entry); err != 0) return err;
  return 0;
}

int ReceiveTree::sync_pieces(const std::vector<PieceRecord>& pieces) {
  // Past kSyncEachFileUpTo files it is a syncfs whatever they are, so no
  // more are listed: a journal that came late (an offer answered part by
  // part gets it with its last part) finds nearly every piece waiting.
  std::set<size_t> files;
  bool let_go = false;
  {
    std::shared_lock grow(sealing_);  // the layout's front may go (release_written)
    const uint64_t from = layout_.held_from();
    for (const auto& r : pieces) {
      if (r.offset < from) let_go = true;  // their files have no name to sync by any more
      const uint64_t start = std::max(r.offset, from), end = r.offset + r.length;
      if (start < end)
        (void)layout_.for_each(start, end - start, [&](const Extent& x) {
          files.insert(x.entry);
          return files.size() <= kSyncEachFileUpTo;
        });
      if (let_go || files.size() > kSyncEachFileUpTo) break;
    }
  }
  if (let_go) return ::syncfs(root_fd_) == 0 ? 0 : errno;
  return sync_files(files);
}

int ReceiveTree::sync_file(size_t entry) {
  std::shared_lock grow(sealing_);  // a tree growing part by part moves what open_temp reads
  // Forgotten: its name is gone with its entry; the file system's sync covers it.
  if (!held(entry)) return ::syncfs(root_fd_) == 0 ? 0 : errno;
  std::string error;
  auto fd = fds_.get(entry, error);
  if (!fd) return EIO;
  return ::fdatasync(fd->get()) == 0 ? 0 : errno;
}

std::string ReceiveTree::finalize(int& err) {
  {
    std::unique_lock seal(sealing_);
    sealed_ = true;  // waits for writes in progress; later ones are dropped
  }
  err = 0;
  auto fail = [&](const std::string& what, int e) {
    err = e;
    return what + ": " + errno_text(e);
  };
  std::set<std::string> parents_touched;
  // Files forgotten (release_written) were settled beneath a staged
  // directory: nothing to do for them here but move their directory. The
  // loops below see only the entries held (slots_).
  std::string failure;
  slots_.for_each([&](size_t i, Slot& s) {
    const auto& e = *s.entry;
    if (!failure.empty() || e.kind != wire::EntryKind::file || !s.keep || !s.refresh) return;
    // Unchanged here: its bytes stay, its attributes follow the source's.
    if (security::UniqueFd fd = open_existing(i); fd.valid()) {
      apply_metadata(fd.get(), {}, i);
      if (::fchmod(fd.get(), e.mode & 07777) != 0) failure = fail("chmod of '" + security::printable_path(e.path) + "'", errno);
    }
  });
  if (!failure.empty()) return failure;
  if (backup_.on())
    if (std::string why = keep_backups(err); !why.empty()) return why;
  // Each temporary file's bytes must be durable before its rename. For a
  // tree of many files one syncfs of the target's file system does it
  // (an fsync each would cost a journal commit per file on ext4); a few
  // files are synced alone, so an unrelated writer's dirty pages elsewhere
  // on the file system are not waited for.
  size_t to_rename = forgotten_;
  std::vector<size_t> files;
  slots_.for_each([&](size_t i, Slot& s) {
    const auto& e = *s.entry;
    if (e.kind != wire::EntryKind::file || s.keep || e.hard_link_to) return;
    files.push_back(i);
    to_rename += !s.keep_existing;
  });
  const bool sync_all = to_rename > kSyncEachFileUpTo;
  if (sync_all && ::syncfs(root_fd_) != 0) return fail("syncfs of the target's file system", errno);
  std::mutex mu;
  for_each_directory(files, [&](size_t i) {
    int e = 0;
    std::string why = finalize_file(i, sync_all, e);
    if (why.empty()) return true;
    std::lock_guard lock(mu);
    if (failure.empty()) failure = std::move(why), err = e;
    return false;
  });
  if (!failure.empty()) return failure;
  for (size_t i : files) parents_touched.insert(parent(i));
  const std::vector<size_t> held = held_entries();
  fds_.clear();
  dirs_.clear();
  // Staged directories into place: every file beneath each is complete and
  // durable now. A directory that appeared at the place meanwhile is
  // replaced only if empty (rename's rule); else this fails and the staged
  // one stays, as temporary files do.
  for (const auto& root : stage_roots_) {
    auto from = RelativePath::parse(root.disk_path);
    if (!from) {
      err = EINVAL;
      return from.error().message;
    }
    auto holder = security::open_parent_beneath(root_fd_, from.value(), false);
    if (!holder) {
      err = EIO;
      return holder.error().message;
    }
    if (::renameat(holder.value().dir.get(), holder.value().leaf.c_str(), holder.value().dir.get(), leaf(root.entry).c_str()) != 0)
      return fail("cannot move the directory '" + security::printable_path(entry(root.entry).path) + "' into place", errno);
    parents_touched.insert(parent(root.entry));
  }
  // Hard links (-H), once every file is in place: another name for the file
  // of an earlier entry, both beneath the target with no symlink on the way
  // (so nothing outside the transfer can be linked in). Made under a
  // temporary name and renamed over what stands there.
  for (size_t i : held) {
    const auto& e = entry(i);
    if (e.kind != wire::EntryKind::file || !e.hard_link_to) continue;
    const size_t first = *e.hard_link_to;
    auto from = security::open_parent_beneath(root_fd_, rel(first), false);
    auto to = security::open_parent_beneath(root_fd_, rel(i), true);
    if (!from || !to) {
      err = EIO;
      return !from ? from.error().message : to.error().message;
    }
    const int pfd = to.value().dir.get();
    const std::string tmp_leaf = ".braid-" + tag_ + "-" + std::to_string(i) + ".link";
    ::unlinkat(pfd, tmp_leaf.c_str(), 0);
    if (::linkat(from.value().dir.get(), from.value().leaf.c_str(), pfd, tmp_leaf.c_str(), 0) != 0)
      return fail("cannot link '" + security::printable_path(entry(i).path) + "' to '" +
                      security::printable_path(entry(first).path) + "'",
                  errno);
    if (::renameat(pfd, tmp_leaf.c_str(), pfd, to.value().leaf.c_str()) != 0)
      return fail("cannot move the link '" + security::printable_path(entry(i).path) + "' into place", errno);
    // Already a link to the same file there (a second run): rename did nothing.
    ::unlinkat(pfd, tmp_leaf.c_str(), 0);
    parents_touched.insert(parent_of(rel(i)));
  }
  for (size_t i : held) {
    const auto& e = entry(i);
    if (e.kind != wire::EntryKind::symlink || slot(i).link_skipped) continue;
    auto parent = security::open_parent_beneath(root_fd_, rel(i), true);
    if (!parent) {
      err = EIO;
      return parent.error().message;
    }
    const int pfd = parent.value().dir.get();
    const std::string tmp_leaf = ".braid-" + tag_ + "-" + std::to_string(i) + ".link";
    ::unlinkat(pfd, tmp_leaf.c_str(), 0);
    if (::symlinkat(e.link_target.c_str(), pfd, tmp_leaf.c_str()) != 0)
      return fail("cannot create the link '" + security::printable_path(entry(i).path) + "'", errno);
    const timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)}, {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
    apply_metadata(pfd, tmp_leaf, i);
    (void)::utimensat(pfd, tmp_leaf.c_str(), times, AT_SYMLINK_NOFOLLOW);
    if (::renameat(pfd, tmp_leaf.c_str(), pfd, parent.value().leaf.c_str()) != 0)
      return fail("cannot move the link '" + security::printable_path(entry(i).path) + "' into place", errno);
    parents_touched.insert(parent_of(rel(i)));
  }
  // Directories last, deepest first: their mtimes change whenever an entry
  // inside them is created.
  for (auto at = held.rbegin(); at != held.rend(); ++at) {
    const size_t k = *at;
    const auto& e = entry(k);
    if (e.kind != wire::EntryKind::directory) continue;
    auto d = security::make_dirs_beneath(root_fd_, rel(k), 0700);
    if (!d) {
      err = EIO;
      return d.error().message;
    }
    (void)::fsync(d.value().get());
    apply_metadata(d.value().get(), {}, k);
    if (::fchmod(d.value().get(), e.mode & 07777) != 0) return fail("chmod of '" + security::printable_path(entry(k).path) + "'", errno);
    const timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)}, {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
    (void)::futimens(d.value().get(), times);
    parents_touched.erase(entry(k).path);
  }
  // Make the renames durable in the directories the offer did not name.
  for (const auto& p : parents_touched) {
    if (p.empty()) {
      (void)::fsync(root_fd_);
      continue;
    }
    if (auto rel = RelativePath::parse(p); rel)
      if (auto d = security::make_dirs_beneath(root_fd_, rel.value()); d) (void)::fsync(d.value().get());
  }
  return {};
}

security::UniqueFd ReceiveTree::open_existing(size_t entry) const {
  auto fd = security::open_beneath(root_fd_, rel(entry), O_RDONLY);
  if (!fd) return security::UniqueFd();
  struct stat st {};
  if (::fstat(fd.value().get(), &st) != 0 || !S_ISREG(st.st_mode)) return security::UniqueFd();
  return std::move(fd.value());
}

int ReceiveTree::copy_from_existing(size_t entry, uint64_t file_offset, uint64_t length) {
  security::UniqueFd from = open_existing(entry);
  if (!from.valid()) return ENOENT;
  std::string error;
  auto to = fds_.get(entry, error);
  if (!to) return EIO;
  loff_t in = static_cast<loff_t>(file_offset), out = static_cast<loff_t>(file_offset);
  uint64_t left = length;
  while (left > 0) {
    const ssize_t n = ::copy_file_range(from.get(), &in, to->get(), &out, left, 0);
    if (n > 0) {
      left -= static_cast<uint64_t>(n);
      continue;
    }
    if (n == 0) return ENODATA;  // the existing file got shorter meanwhile
    if (errno == EINTR) continue;
    if (errno != EXDEV && errno != ENOSYS && errno != EOPNOTSUPP && errno != EINVAL) return errno;
    // No copy_file_range between these files: through a buffer.
    std::vector<uint8_t> buf(std::min<uint64_t>(left, 1 << 20));
    while (left > 0) {
      const ssize_t r = ::pread(from.get(), buf.data(), std::min<uint64_t>(left, buf.size()), in);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return r == 0 ? ENODATA : errno;
      for (ssize_t done = 0; done < r;) {
        const ssize_t w = ::pwrite(to->get(), buf.data() + done, static_cast<size_t>(r - done), out + done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w == 0 ? ENOSPC : errno;
        done += w;
      }
      in += r;
      out += r;
      left -= static_cast<uint64_t>(r);
    }
  }
  return 0;
}

void ReceiveTree::keep_existing(size_t entry) {
  if (Slot* s = slots_.find(entry)) s->keep_existing = true;
}

std::string ReceiveTree::finalize_file(size_t i, bool synced, int& err) {
  if (slot(i).keep_existing) return settle_existing(i, err);
  const auto& e = entry(i);
  auto fail = [&](const std::string& what, int code) {
    err = code;
    return what + ": " + errno_text(code);
  };
  const timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)}, {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
  const bool metadata = e.owner || e.group || e.xattrs;
  // Durable too: nothing left but its name.
  const bool settled = synced && written_and_set(i);
  if (settled && slot(i).staged == kInStaged) return {};  // its directory is renamed into place instead
  std::string error;
  auto parent = parent_dir(i, false, error);
  if (!parent) {
    err = EIO;
    return error;
  }
  const std::string tmp_leaf = temp_leaf(i);
  if (settled) {
    // Nothing to set (above): only the rename below, outside a staged directory.
  } else if (synced && slot(i).mode_set && !metadata) {
    // Durable already (syncfs) and its mode set at prepare: only its mtime,
    // by name in its directory, never through a link.
    if (::utimensat(parent->get(), tmp_leaf.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
      return fail("setting the mtime of '" + security::printable_path(temp_path(i)) + "'", errno);
  } else {
    auto fd = fds_.get(i, error);
    if (!fd) return fail("cannot reopen '" + security::printable_path(temp_path(i)) + "' (" + error + ")", EIO);
    if (!synced && ::fsync(fd->get()) != 0) return fail("fsync of '" + security::printable_path(temp_path(i)) + "'", errno);
    // Owner first (a chown clears set-id bits and file capabilities), the
    // ACLs before the mode (setting one rewrites the group bits).
    apply_metadata(fd->get(), {}, i);
    if (::fchmod(fd->get(), e.mode & 07777) != 0) return fail("chmod of '" + security::printable_path(temp_path(i)) + "'", errno);
    if (::futimens(fd->get(), times) != 0) return fail("setting the mtime of '" + security::printable_path(temp_path(i)) + "'", errno);
  }
  if (slot(i).staged == kInStaged) return {};  // its directory is renamed into place instead
  if (::renameat(parent->get(), tmp_leaf.c_str(), parent->get(), leaf(i).c_str()) != 0)
    return fail("cannot move '" + security::printable_path(entry(i).path) + "' into place", errno);
  return {};
}

std::string ReceiveTree::settle_existing(size_t i, int& err) {
  const auto& e = entry(i);
  security::UniqueFd fd = open_existing(i);
  if (!fd.valid()) {
    err = ENOENT;
    return "'" + security::printable_path(e.path) + "' went away on the receiver during the sync";
  }
  const timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)}, {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
  apply_metadata(fd.get(), {}, i);
  if (::fchmod(fd.get(), e.mode & 07777) != 0 || ::futimens(fd.get(), times) != 0) {
    err = errno;
    return "setting the mode and mtime of '" + security::printable_path(e.path) + "': " + errno_text(err);
  }
  auto parent = security::open_parent_beneath(root_fd_, rel(i), false);
  if (parent) {
    const std::string tmp_leaf = ".braid-" + tag_ + "-" + std::to_string(i) + ".part";
    (void)::unlinkat(parent.value().dir.get(), tmp_leaf.c_str(), 0);
  }
  return {};
}

std::string ReceiveTree::keep_backups(int& err) {
  std::set<std::string> made_in;
  for (size_t i : held_entries()) {
    // Nothing stands yet beneath a staged directory (where every file
    // forgotten is); kept files stay.
    if (slot(i).staged == kInStaged) continue;
    const auto& e = entry(i);
    if (e.kind == wire::EntryKind::directory) continue;
    if (e.kind == wire::EntryKind::file && (slot(i).keep || slot(i).keep_existing)) continue;
    if (e.kind == wire::EntryKind::symlink && slot(i).link_skipped) continue;
    auto at = security::open_parent_beneath(root_fd_, rel(i), false);
    if (!at) continue;  // no parent yet: nothing there
    struct stat st {};
    if (::fstatat(at.value().dir.get(), at.value().leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode))
      continue;  // nothing there, or a directory (the rename fails on it as it would without a backup)
    if (e.kind == wire::EntryKind::file && e.hard_link_to) {
      // Already another name of the file it links to (a second run): the
      // link made again changes nothing worth a backup.
      struct stat first {};
      if (auto f = security::open_parent_beneath(root_fd_, rel(*e.hard_link_to), false);
          f && ::fstatat(f.value().dir.get(), f.value().leaf.c_str(), &first, AT_SYMLINK_NOFOLLOW) == 0 &&
          first.st_dev == st.st_dev && first.st_ino == st.st_ino)
        continue;
    }
    if (e.kind == wire::EntryKind::symlink && S_ISLNK(st.st_mode)) {
      std::string target(e.link_target.size() + 1, '\0');
      const ssize_t n = ::readlinkat(at.value().dir.get(), at.value().leaf.c_str(), target.data(), target.size());
      if (n >= 0 && static_cast<size_t>(n) == e.link_target.size() && target.compare(0, e.link_target.size(), e.link_target) == 0)
        continue;  // the same link: nothing is replaced
    }
    std::string dir;
    const std::string why = keep_backup(root_fd_, backup_, e.path, ".braid-" + tag_ + "-" + std::to_string(i) + ".bak", &dir);
    if (!why.empty()) {
      err = EIO;
      return why;
    }
    made_in.insert(dir);
  }
  // Durable before any rename replaces an old version: its backup may be
  // its only name then. A few directories are synced alone, many at once.
  if (made_in.size() > 16) {
    if (::syncfs(root_fd_) != 0) {
      err = errno;
      return std::string("syncfs of the target's file system: ") + std::strerror(err);
    }
  } else {
    for (const auto& d : made_in) {
      if (d.empty()) {
        (void)::fsync(root_fd_);
      } else if (auto r = RelativePath::parse(d); r) {
        if (auto fd = security::open_beneath(root_fd_, r.value(), O_RDONLY | O_DIRECTORY); fd) (void)::fsync(fd.value().get());
      }
    }
  }
  return {};
}

void ReceiveTree::apply_metadata(int fd, const std::string& leaf, size_t i) {
  const auto& e = entry(i);
  auto warn = [&](std::string what) {
    std::lock_guard lock(metadata_mu_);  // files are finalized in parallel, by directory
    if (metadata_failures_++ >= 100) return;
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "'" + std::string&&.
    std::string line(1, '\'');
    line += security::printable_path(e.path);
    line += "': ";
    line += what;
    metadata_warnings_.push_back(std::move(line));
  };
  if (e.owner || e.group)
    if (const int r = apply_owner(fd, leaf, e, ids_); r != 0)
      warn(std::string("cannot set its owner or group: ") + errno_text(r));
  if (e.xattrs && leaf.empty())
    if (std::string failed = apply_xattrs(fd, *e.xattrs); !failed.empty())
      warn("cannot set its extended attributes (" + failed + ")");
}

// ---- part by part (protocol 9) --------------------------------------------------

std::variant<std::unique_ptr<ReceiveTree>, PrepareError> ReceiveTree::begin_parts(int root_fd, const wire::Offer& head,
                                                                                 const PrepareOptions& opts) {
  if (opts.tag.empty() || opts.tag.find_first_not_of("0123456789abcdef") != std::string::npos)
    return PrepareError{wire::RefuseReason::bad_offer, "internal error: a temporary-file tag must be hex digits"};
  auto offer = std::make_shared<wire::Offer>(head);
  offer->entries.clear();
  std::unique_ptr<ReceiveTree> t(new ReceiveTree(root_fd, std::move(offer), opts.tag));
  t->growing_ = std::make_unique<Growing>();
  t->backup_ = opts.backup;
  t->links_ = opts.links;
  t->growing_->avail = free_space(root_fd, opts);
  t->growing_->ordered = t->ordered_ = head.ordered;
  return t;
}

std::optional<PrepareError> ReceiveTree::add_part(size_t first, wire::EntryParts::Part part) {
  if (!growing_ || first != slots_.size())
    return PrepareError{wire::RefuseReason::bad_offer, "internal error: offer parts out of order"};
  if (growing_->refused)
    return PrepareError{wire::RefuseReason::bad_offer, "internal error: an offer part after a refused one"};
  auto err = join_part(first, std::move(part));
  // A refused part may have left some of its paths in the index, by
  // indices that the next part's entries would take.
  if (err) growing_->refused = true;
  return err;
}

std::optional<PrepareError> ReceiveTree::join_part(size_t first, wire::EntryParts::Part part) {
  Growing& g = *growing_;
  static const std::vector<wire::ManifestEntry> kNone;
  const std::vector<wire::ManifestEntry>& es = part ? *part : kNone;
  parts_.append(std::move(part));  // shared with the session machine: read in place, never copied
  auto earlier = [&](size_t i) -> const wire::ManifestEntry& {
    return i < first ? entry(i) : es[i - first];
  };
  // The parts' entries number at most kMaxOfferEntries (wire::append_offer_part):
  // their indices fit in 32 bits.
  const auto path_of = [&](uint32_t i) -> std::string_view { return earlier(i).path; };
  // 1. The checks prepare makes of a whole offer, against every entry so
  //    far: the ones after these come later and are checked then.
  // What joins the tree's slots in 3 (lanes read them meanwhile): each
  // entry's directory (a new place joins places_ here: its node never
  // moves, and no lane reads it before the entries that point to it join)
  // and whether it is staged.
  std::vector<Dir*> new_dir;
  std::vector<uint8_t> new_staged;
  uint64_t data = 0;
  for (size_t k = 0; k < es.size(); ++k) {
    const auto& e = es[k];
    const size_t i = first + k;
    auto p = RelativePath::parse(e.path);
    if (!p)
      return PrepareError{wire::RefuseReason::bad_path,
                          "refused a path from the sender: '" + security::printable_path(e.path) + "': " + p.error().message};
    if (g.ordered) {
      // In path order: checked against the last path alone (path_order.hpp),
      // and no entry may name another, whose path may be forgotten by then.
      if (std::string why = g.order.follow(e.path, e.kind); !why.empty())
        return PrepareError{wire::RefuseReason::bad_offer, std::move(why)};
      if (e.hard_link_to)
        return PrepareError{wire::RefuseReason::bad_offer, "the offer says it has no hard links, but links '" +
                                                               security::printable_path(e.path) + "' to another entry"};
    } else {
      if (!g.seen.insert(static_cast<uint32_t>(i), e.path, path_of))
        return PrepareError{wire::RefuseReason::bad_offer, "the offer names '" + security::printable_path(e.path) + "' twice"};
      const std::string_view path = e.path;
      for (size_t slash = path.find('/'); slash != std::string_view::npos; slash = path.find('/', slash + 1)) {
        const std::string_view prefix = path.substr(0, slash);
        if (const auto at = g.seen.find(prefix, path_of); at && earlier(*at).kind != wire::EntryKind::directory)
          return PrepareError{wire::RefuseReason::bad_offer, "the offer puts '" + security::printable_path(e.path) +
                                                                 "' beneath '" + security::printable_path(prefix) +
                                                                 "', which it does not send as a directory"};
      }
      if (e.kind != wire::EntryKind::directory && places_.count(e.path))  // an earlier entry lies beneath it
        return PrepareError{wire::RefuseReason::bad_offer, "the offer puts entries beneath '" +
                                                               security::printable_path(e.path) +
                                                               "', which it does not send as a directory"};
    }
    if (e.hard_link_to) {
      const size_t to = *e.hard_link_to;
      if (to >= i || earlier(to).kind != wire::EntryKind::file || earlier(to).hard_link_to)
        return PrepareError{wire::RefuseReason::bad_offer, "the offer links '" + security::printable_path(e.path) +
                                                               "' to an entry that is no earlier file"};
    }
    if (e.kind == wire::EntryKind::file) data += e.data_bytes();
    // In path order, the directories the walk has left are done with:
    // nothing later lies beneath them.
    if (g.ordered) leave_directories(g, e.path);
    // Its parent's place among the directories (made, or staged, below).
    const std::string parent = parent_of(p.value());
    auto [at, added] = places_.try_emplace(parent);
    Dir* dir = &*at;
    if (added) {
      auto st = g.staged.find(parent);
      dir->second.staged = st != g.staged.end();
      dir->second.disk = dir->second.staged ? st->second : parent;
    }
    new_dir.push_back(dir);
    // A directory of the offer staged (see the top) when nothing stands at
    // its place, its parent is there and no earlier entry lies beneath it
    // (that one went to its final place); beneath a staged one, staged too.
    uint8_t staged = dir->second.staged ? kInStaged : 0;
    if (e.kind == wire::EntryKind::directory) {
      std::optional<std::string> disk;
      if (staged == kInStaged) {
        disk = dir->second.disk + "/" + leaf_of(e.path);
      } else if (auto where = security::open_parent_beneath(root_fd_, p.value(), false);
                 where && !places_.count(e.path)) {
        struct stat st {};
        if (::fstatat(where.value().dir.get(), where.value().leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) {
          const std::string name = ".braid-" + tag_ + "-" + std::to_string(i) + ".dir";
          disk = parent.empty() ? name : parent + "/" + name;
          stage_roots_.push_back(StageRoot{i, *disk});
          staged = kStageRoot;
        }
      }
      if (disk) g.staged.emplace(e.path, std::move(*disk));
      if (g.ordered) g.open.push_back({e.path, i});
    }
    new_staged.push_back(staged);
  }
  // 2. Room for the data: every part's together, against what was free when
  //    the first came (as a whole offer's against what is free at prepare).
  g.data += data;
  if (g.avail && *g.avail < g.data)
    return PrepareError{wire::RefuseReason::no_space,
                        "not enough space in the target directory: " + format_size(Bytes(g.data)) + " of data offered in the first " +
                            std::to_string(first + es.size()) + " entries, " + format_size(Bytes(*g.avail)) + " available"};
  // 3. The entries join the tree: lanes may write into them from the return on.
  std::vector<size_t> files;
  {
    std::unique_lock grow(sealing_);  // no write in progress reads what moves here
    for (size_t k = 0; k < es.size(); ++k) {
      const auto& e = es[k];
      const size_t i = first + k;
      const bool file = e.kind == wire::EntryKind::file;
      // No kept_ or found_: a resume, which reopens temporary files, is
      // prepared whole (part_kept and part_size_found say none beyond them).
      Slot& s = add_slot(e, new_dir[k]);
      s.staged = new_staged[k];
      s.create_state = file ? kToCreate : kCreated;
      s.unwritten = file && !e.hard_link_to && e.size > 0 ? static_cast<int64_t>(e.size) : -1;
      layout_.append(e, i);
      if (file) files.push_back(i);
    }
    total_.store(layout_.total(), std::memory_order_release);
    entry_count_.store(slots_.size(), std::memory_order_release);
    file_count_.fetch_add(files.size(), std::memory_order_acq_rel);
  }
  // 4. Their directories made, their files' places checked (each file is
  //    made when its first bytes come, as in prepare).
  for (size_t k = 0; k < es.size(); ++k)
    if (es[k].kind == wire::EntryKind::directory)
      if (auto err = make_directory(first + k)) return err;
  return create_files(files, /*keep_parts=*/false);
}

std::optional<PrepareError> ReceiveTree::close_parts(std::shared_ptr<const wire::Offer> fields) {
  if (!growing_ || parts_.size() != slots_.size())
    return PrepareError{wire::RefuseReason::bad_offer, "internal error: the offer's parts and the tree's entries differ"};
  {
    std::unique_lock grow(sealing_);
    offer_ = std::move(fields);
    if (growing_->ordered) leave_directories(*growing_, {});  // the walk is over: it has left them all
    growing_.reset();  // the path sets (the entries stay where they are, in parts_)
    places_.rehash(0);  // their slack: those of an ordered walk went as it left them
  }
  decide_links(links_);
  return std::nullopt;
}

std::vector<size_t> ReceiveTree::held_entries() {
  std::vector<size_t> out;
  out.reserve(slots_.held());
  slots_.for_each([&](size_t i, Slot&) { out.push_back(i); });
  return out;
}

bool ReceiveTree::written_and_set(size_t i) const {
  // A count of bytes still to come at exactly 0 is a file that was made and
  // had each byte written once, its mtime set by the last write (-1 from
  // the start for an empty file or a link, and never 0 for a sparse file
  // with holes, whose holes are not written).
  const auto& e = entry(i);
  return slot(i).mode_set && !e.owner && !e.group && !e.xattrs && slot(i).unwritten.load() == 0;
}

size_t ReceiveTree::release_written(uint64_t verified_to) {
  // Up to kSyncEachFileUpTo files, finalize syncs each by itself (then a
  // settled file still needs it): a tree that small has nothing to let go.
  if (!ordered_ || file_count() <= kSyncEachFileUpTo) return 0;
  const size_t before = forgotten_;
  std::unique_lock grow(sealing_);  // no write in progress reads an entry that goes here
  if (sealed_) return 0;
  // 1. The parts whose bytes are all verified leave the window. A file
  //    written once and set is forgotten at once (and its directory's place
  //    with the last entry in it); one that finalize would still touch is
  //    set aside to be settled in 2, its entry read in its part meanwhile;
  //    the rest is set aside with a copy of its entry. From here on a later
  //    copy of their bytes is dropped (write).
  std::vector<size_t> settle;
  size_t parts_done = parts_.released(), release_to = 0;
  while (parts_done < parts_.parts().size()) {
    const std::vector<wire::ManifestEntry>& part = *parts_.parts()[parts_done];
    uint64_t end = release_offset_;
    for (const auto& e : part)
      if (e.kind == wire::EntryKind::file) end += e.size;
    if (end > verified_to) break;
    const size_t next = parts_.first_of(parts_done) + part.size();
    slots_.let_go_before(next, [&](size_t i, Slot& s) {
      if (s.staged == kInStaged && written_and_set(i)) {
        forget(s);
        return false;
      }
      if (s.staged == kInStaged && s.entry->kind == wire::EntryKind::file && settles_early(*s.entry)) settle.push_back(i);
      else keep_copy(s);
      return true;
    });
    layout_.release_before(next);
    release_offset_ = end;
    release_to = next;
    ++parts_done;
  }
  // 2. Settled outside the lock (their system calls would hold every lane's
  //    writes), then forgotten; a directory the walk has left becomes ready
  //    once what lay beneath it is forgotten, so this goes round from the
  //    leaves up. What fails is copied and left to finalize, which tries
  //    again and says why.
  for (ready_directories(settle); !settle.empty(); ready_directories(settle)) {
    grow.unlock();
    std::vector<uint8_t> done(settle.size());
    for (size_t k = 0; k < settle.size(); ++k)
      done[k] = entry(settle[k]).kind == wire::EntryKind::directory ? settle_directory(settle[k]) : settle_file(settle[k]);
    grow.lock();
    for (size_t k = 0; k < settle.size(); ++k) {
      Slot& s = slot(settle[k]);
      if (!done[k]) {
        if (!s.copy) keep_copy(s);
        continue;
      }
      if (s.entry->kind == wire::EntryKind::directory)  // its own place, if one is left with nothing in it
        if (auto own = places_.find(s.entry->path); own != places_.end() && own->second.users == 0) places_.erase(own);
      forget(s);
      slots_.forget_aside(settle[k]);
    }
    settle.clear();
  }
  // Every entry of those parts now has its copy, or is gone: the parts go.
  if (release_to > 0) parts_.release_before(release_to);
  return forgotten_ - before;
}

void ReceiveTree::forget(Slot& s) {
  if (--s.dir->second.users == 0) places_.erase(places_.find(s.dir->first));
  ++forgotten_;
}

void ReceiveTree::keep_copy(Slot& s) {
  s.copy = std::make_unique<const wire::ManifestEntry>(*s.entry);
  s.entry = s.copy.get();
  ++copied_;
}

bool ReceiveTree::settles_early(const wire::ManifestEntry& e) {
  // Only while its owner may still write it (a directory: make and remove
  // names in it): a resume reopens what is staged for writing, and an
  // abandoned staged tree is removed (debris.hpp), neither of which a
  // receiver that is not root could do in a read-only file or directory.
  // Those are left to finalize, as a hard link is.
  if (e.kind == wire::EntryKind::directory) return (e.mode & 0700) == 0700;
  return e.kind == wire::EntryKind::file && !e.hard_link_to && (e.mode & 0600) == 0600 && (e.mode & 07000) == 0;
}

void ReceiveTree::leave_directories(Growing& g, const std::string& path) {
  while (!g.open.empty() && !is_beneath(path, g.open.back().path)) {
    g.staged.erase(g.open.back().path);
    dirs_left_.push_back(g.open.back().entry);
    g.open.pop_back();
  }
}

void ReceiveTree::ready_directories(std::vector<size_t>& settle) {
  // dirs_left_ is deepest first (a directory is left with or after those
  // beneath it): the directories ready now, with nothing held beneath them.
  size_t still = 0;
  for (const size_t d : dirs_left_) {
    if (d >= slots_.base()) {  // not let go yet, nor anything beneath it
      dirs_left_[still++] = d;
      continue;
    }
    const Slot* s = slots_.find(d);
    // A staged directory itself is renamed at finalize; a read-only one is settled there.
    if (!s || s->staged != kInStaged || !settles_early(*s->entry)) continue;
    const auto place = places_.find(s->entry->path);
    if (place != places_.end() && place->second.users > 0) {  // something beneath it still held
      dirs_left_[still++] = d;
      continue;
    }
    settle.push_back(d);
  }
  dirs_left_.resize(still);
}

bool ReceiveTree::settle_directory(size_t i) {
  // What finalize's last step does for it, beneath the staged directory
  // (nothing more is made in it: the walk has left it and every entry
  // beneath it is settled).
  auto where = RelativePath::parse(disk_path(i));
  if (!where) return false;
  auto d = security::open_beneath(root_fd_, where.value(), O_RDONLY | O_DIRECTORY);
  return d && set_attributes(d.value().get(), i);
}

bool ReceiveTree::settle_file(size_t i) {
  // An empty file, a sparse one of holes alone, one written twice or with
  // an owner or xattrs (release_written takes only those settles_early
  // allows and that are not written_and_set already): made if it is not
  // yet, then given what finalize_file would give it. Every byte is on
  // disk, and a later copy of them is dropped from here on.
  std::string error;
  security::UniqueFd fd = fds_.open_once(i, error);
  return fd.valid() && set_attributes(fd.get(), i);
}

bool ReceiveTree::set_attributes(int fd, size_t i) {
  // Owner first (a chown clears set-id bits), the ACLs before the mode, the
  // mtime last: finalize's order.
  const auto& e = entry(i);
  apply_metadata(fd, {}, i);
  const timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)}, {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
  return ::fchmod(fd, e.mode & 07777) == 0 && ::futimens(fd, times) == 0;
}

std::string check_writable_dir(int dir_fd, const std::string& shown_name) {
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0 || !S_ISDIR(st.st_mode)) return "'" + shown_name + "' is not a directory";
  const std::string probe = ".braid-probe-" + std::to_string(::getpid());
  int fd = ::openat(dir_fd, probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return "cannot create files in '" + shown_name + "': " + errno_text(errno);
  ::close(fd);
  ::unlinkat(dir_fd, probe.c_str(), 0);
  return {};
}

}  // namespace braid::files
