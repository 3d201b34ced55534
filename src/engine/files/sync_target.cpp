#include "engine/files/sync_target.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "engine/files/backup.hpp"
#include "engine/security/safe_path.h"

namespace braid::files {

using security::RelativePath;

FoundFile stat_beneath(int root_fd, const std::string& path) {
  FoundFile f;
  auto rel = RelativePath::parse(path);
  if (!rel) return f;
  auto parent = security::open_parent_beneath(root_fd, rel.value(), /*create_dirs=*/false);
  if (!parent) return f;
  struct stat st {};
  if (::fstatat(parent.value().dir.get(), parent.value().leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return f;
  f.kind = S_ISREG(st.st_mode) ? 1 : 2;
  f.size = static_cast<uint64_t>(st.st_size);
  f.mtime_sec = st.st_mtim.tv_sec;
  f.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
  return f;
}

FoundFile TargetStat::at(const std::string& path) {
  FoundFile f;
  auto rel = RelativePath::parse(path);
  if (!rel) return f;
  const auto& c = rel.value().components();
  std::string parent;
  for (size_t i = 0; i + 1 < c.size(); ++i) parent += (i ? "/" : "") + c[i];
  if (!opened_ || parent != parent_) {
    opened_ = true;
    parent_ = parent;
    dir_ = security::UniqueFd();
    if (parent.empty()) {
      dir_ = security::UniqueFd(::fcntl(root_fd_, F_DUPFD_CLOEXEC, 0));
    } else if (auto p = RelativePath::parse(parent); p) {
      if (auto d = security::open_beneath(root_fd_, p.value(), O_RDONLY | O_DIRECTORY); d) dir_ = std::move(d.value());
    }
  }
  if (!dir_.valid()) return f;
  struct stat st {};
  if (::fstatat(dir_.get(), c.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return f;
  f.kind = S_ISREG(st.st_mode) ? 1 : 2;
  f.size = static_cast<uint64_t>(st.st_size);
  f.mtime_sec = st.st_mtim.tv_sec;
  f.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
  return f;
}

namespace {

// The names in an open directory (not . and ..). Takes the fd.
std::vector<std::string> list_dir(security::UniqueFd dir) {
  std::vector<std::string> out;
  DIR* d = ::fdopendir(dir.get());
  if (!d) return out;
  (void)dir.release();  // closedir closes it
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  return out;
}

// Removes everything in the directory `dir` (never following a link), then
// nothing else: the caller removes the directory itself.
std::string empty_dir(int dir, const std::string& shown, uint64_t& removed, int depth) {
  if (depth > 256) return "'" + shown + "' is nested too deep to remove";
  const int fd = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return "cannot list '" + shown + "': " + std::strerror(errno);
  for (const auto& name : list_dir(security::UniqueFd(fd))) {
    if (::unlinkat(dir, name.c_str(), 0) == 0) {
      ++removed;
      continue;
    }
    if (errno != EISDIR && errno != EPERM) return "cannot remove '" + shown + "/" + name + "': " + std::strerror(errno);
    security::UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub.valid()) return "cannot open '" + shown + "/" + name + "': " + std::strerror(errno);
    if (auto e = empty_dir(sub.get(), shown + "/" + name, removed, depth + 1); !e.empty()) return e;
    if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0)
      return "cannot remove '" + shown + "/" + name + "': " + std::strerror(errno);
    ++removed;
  }
  return {};
}

}  // namespace

std::vector<std::string> find_extraneous(int root_fd, const wire::Offer& offer) {
  const BackupOptions backup = backup_options(offer.sync);
  std::set<std::string> named;
  for (const auto& e : offer.entries) named.insert(e.path);
  std::vector<std::string> out;
  for (const auto& e : offer.entries) {
    if (e.kind != wire::EntryKind::directory) continue;
    auto rel = RelativePath::parse(e.path);
    if (!rel) continue;
    auto dir = security::open_beneath(root_fd, rel.value(), O_RDONLY | O_DIRECTORY);
    if (!dir) continue;  // not there yet, or not a directory: nothing in it to remove
    for (const auto& name : list_dir(std::move(dir.value()))) {
      if (name.rfind(".braid-", 0) == 0) continue;  // temporary files of this or another transfer
      const std::string path = rel.value().str() + "/" + name;
      if (!named.count(path) && !(backup.on() && is_backup(backup, path))) out.push_back(path);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string remove_tree_beneath(int root_fd, const std::string& path, uint64_t& removed) {
  auto rel = RelativePath::parse(path);
  if (!rel) return "'" + security::printable_path(path) + "': " + rel.error().message;
  auto parent = security::open_parent_beneath(root_fd, rel.value(), /*create_dirs=*/false);
  if (!parent) return parent.error().message;
  const int pfd = parent.value().dir.get();
  const char* leaf = parent.value().leaf.c_str();
  if (::unlinkat(pfd, leaf, 0) == 0) {
    ++removed;
    return {};
  }
  if (errno == ENOENT) return {};
  if (errno != EISDIR && errno != EPERM)
    return "cannot remove '" + security::printable_path(path) + "': " + std::strerror(errno);
  security::UniqueFd dir(::openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.valid()) return "cannot open '" + security::printable_path(path) + "': " + std::strerror(errno);
  if (auto e = empty_dir(dir.get(), security::printable_path(path), removed, 0); !e.empty()) return e;
  if (::unlinkat(pfd, leaf, AT_REMOVEDIR) != 0)
    return "cannot remove '" + security::printable_path(path) + "': " + std::strerror(errno);
  ++removed;
  return {};
}

}  // namespace braid::files
