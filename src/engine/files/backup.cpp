#include "engine/files/backup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "engine/files/sync_target.hpp"
#include "engine/security/safe_path.h"

namespace braid::files {

using security::RelativePath;

namespace {

std::string shown(const std::string& p) { return "'" + security::printable_path(p) + "'"; }

std::string parent_of(const std::string& p) {
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? std::string() : p.substr(0, slash);
}

// A copy of the regular file or symlink `leaf` in `from` as `to_leaf` in
// `to`, with its mode and mtime, durable: where the file system takes no
// hard link (or the backup directory is another mount). 0 or errno.
int copy_entry(int from, const std::string& leaf, const struct stat& st, int to, const std::string& to_leaf) {
  if (S_ISLNK(st.st_mode)) {
    std::vector<char> target(static_cast<size_t>(st.st_size) + 1);
    const ssize_t n = ::readlinkat(from, leaf.c_str(), target.data(), target.size());
    if (n < 0 || static_cast<size_t>(n) >= target.size()) return n < 0 ? errno : EAGAIN;
    target[static_cast<size_t>(n)] = '\0';
    return ::symlinkat(target.data(), to, to_leaf.c_str()) == 0 ? 0 : errno;
  }
  security::UniqueFd in(::openat(from, leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in.valid()) return errno;
  security::UniqueFd out(
      ::openat(to, to_leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 07777));
  if (!out.valid()) return errno;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t r = ::read(in.get(), buf.data(), buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno;
    if (r == 0) break;
    for (ssize_t done = 0; done < r;) {
      const ssize_t w = ::write(out.get(), buf.data() + done, static_cast<size_t>(r - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return w == 0 ? ENOSPC : errno;
      done += w;
    }
  }
  const timespec times[2] = {st.st_atim, st.st_mtim};
  (void)::futimens(out.get(), times);
  return ::fsync(out.get()) == 0 ? 0 : errno;
}

}  // namespace

BackupOptions backup_options(const wire::SyncOptions& sync) { return {sync.backup_suffix, sync.backup_dir}; }

std::string check_backup_options(const BackupOptions& b) {
  if (b.suffix.find('/') != std::string::npos || b.suffix.find('\0') != std::string::npos)
    return "the backup suffix " + shown(b.suffix) + " holds a '/' or a NUL";
  if (b.dir.empty()) return {};
  auto rel = RelativePath::parse(b.dir);
  if (!rel) return "the backup directory " + shown(b.dir) + " is no path beneath the target: " + rel.error().message;
  for (const auto& c : rel.value().components())
    if (c.rfind(".braid-", 0) == 0)  // braid's own temporary names: `braid clean` would sweep it
      return "the backup directory " + shown(b.dir) + " has a name braid keeps for its temporary files";
  return {};
}

std::string backup_path(const BackupOptions& b, const std::string& path) {
  return (b.dir.empty() ? std::string() : b.dir + "/") + path + b.suffix;
}

bool is_backup(const BackupOptions& b, const std::string& path) {
  if (!b.dir.empty())
    return path == b.dir || path.rfind(b.dir + "/", 0) == 0 || b.dir.rfind(path + "/", 0) == 0;
  const std::string leaf = path.substr(path.rfind('/') + 1);
  return !b.suffix.empty() && leaf.size() >= b.suffix.size() &&
         leaf.compare(leaf.size() - b.suffix.size(), b.suffix.size(), b.suffix) == 0;
}

std::string keep_backup(int root_fd, const BackupOptions& b, const std::string& path, const std::string& temp_leaf,
                        std::string* made_in) {
  auto rel = RelativePath::parse(path);
  if (!rel) return shown(path) + ": " + rel.error().message;
  auto from = security::open_parent_beneath(root_fd, rel.value(), /*create_dirs=*/false);
  if (!from) return {};  // no parent: nothing stands there
  struct stat st {};
  if (::fstatat(from.value().dir.get(), from.value().leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? std::string() : "cannot look at " + shown(path) + ": " + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return {};
  const std::string bpath = backup_path(b, path);
  auto brel = RelativePath::parse(bpath);
  if (!brel) return "cannot name the backup of " + shown(path) + ": " + brel.error().message;
  auto to = security::open_parent_beneath(root_fd, brel.value(), /*create_dirs=*/true);
  if (!to) return "cannot make the backup directory of " + shown(bpath) + ": " + to.error().message;
  const int fd = to.value().dir.get();
  (void)::unlinkat(fd, temp_leaf.c_str(), 0);  // left by an interrupted run
  int err = ::linkat(from.value().dir.get(), from.value().leaf.c_str(), fd, temp_leaf.c_str(), 0) == 0 ? 0 : errno;
  if (err == EXDEV || err == EPERM || err == EMLINK || err == ENOTSUP || err == EOPNOTSUPP) {
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) return {};  // a FIFO, a device: not ours to copy
    err = copy_entry(from.value().dir.get(), from.value().leaf, st, fd, temp_leaf);
  }
  if (err != 0) {
    (void)::unlinkat(fd, temp_leaf.c_str(), 0);
    return "cannot keep a backup of " + shown(path) + " as " + shown(bpath) + ": " + std::strerror(err);
  }
  if (::renameat(fd, temp_leaf.c_str(), fd, to.value().leaf.c_str()) != 0) {
    err = errno;
    (void)::unlinkat(fd, temp_leaf.c_str(), 0);
    return "cannot keep a backup of " + shown(path) + " as " + shown(bpath) + ": " + std::strerror(err);
  }
  // The backup was another name of this very file already (a run stopped
  // between its backups and its renames): rename did nothing.
  (void)::unlinkat(fd, temp_leaf.c_str(), 0);
  if (made_in) *made_in = parent_of(brel.value().str());
  return {};
}

std::string move_to_backup(int root_fd, const BackupOptions& b, const std::string& path, uint64_t& moved) {
  auto rel = RelativePath::parse(path);
  if (!rel) return shown(path) + ": " + rel.error().message;
  auto from = security::open_parent_beneath(root_fd, rel.value(), /*create_dirs=*/false);
  if (!from) return {};
  const std::string bpath = backup_path(b, path);
  auto brel = RelativePath::parse(bpath);
  if (!brel) return "cannot name the backup of " + shown(path) + ": " + brel.error().message;
  for (int attempt = 0;; ++attempt) {
    auto to = security::open_parent_beneath(root_fd, brel.value(), /*create_dirs=*/true);
    if (!to) return "cannot make the backup directory of " + shown(bpath) + ": " + to.error().message;
    if (::renameat(from.value().dir.get(), from.value().leaf.c_str(), to.value().dir.get(),
                   to.value().leaf.c_str()) == 0) {
      ++moved;
      return {};
    }
    const int err = errno;
    if (err == ENOENT) return {};
    // An older backup of another kind (or a directory with things in it)
    // is in the way: it goes, as rename would replace a file.
    if (attempt == 0 && (err == ENOTEMPTY || err == EEXIST || err == EISDIR || err == ENOTDIR)) {
      uint64_t removed = 0;
      if (std::string e = remove_tree_beneath(root_fd, bpath, removed); !e.empty()) return e;
      continue;
    }
    return "cannot move " + shown(path) + " to its backup " + shown(bpath) + ": " + std::strerror(err);
  }
}

}  // namespace braid::files
