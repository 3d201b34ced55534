#include "engine/files/debris.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>

#include "engine/security/safe_path.h"
#include "engine/security/unique_fd.h"

namespace braid::files {
namespace {

bool is_hex16(std::string_view s) {
  return s.size() == 16 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}
bool is_digits(std::string_view s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos; }

// The tag of a name braid leaves, or empty if the name is not one.
std::string tag_of(std::string_view name, bool in_root, bool& journal) {
  journal = false;
  constexpr std::string_view resume = ".braid-resume-", probe = ".braid-probe-", any = ".braid-";
  if (in_root && name.starts_with(resume) && is_hex16(name.substr(resume.size()))) {
    journal = true;
    return std::string(name.substr(resume.size()));
  }
  if (in_root && name.starts_with(probe) && is_digits(name.substr(probe.size()))) return "probe";
  if (!name.starts_with(any)) return {};
  std::string_view rest = name.substr(any.size());  // <tag>-<i>.part | <tag>-<i>.link
  if (rest.size() < 17 || rest[16] != '-' || !is_hex16(rest.substr(0, 16))) return {};
  std::string_view tail = rest.substr(17);
  if (!tail.ends_with(".part") && !tail.ends_with(".link") && !tail.ends_with(".dir")) return {};
  if (tail.ends_with(".dir")) return is_digits(tail.substr(0, tail.size() - 4)) ? std::string(rest.substr(0, 16)) : std::string();
  if (!is_digits(tail.substr(0, tail.size() - 5))) return {};
  return std::string(rest.substr(0, 16));
}

struct Found {
  std::string dir;  // relative; "" for the root
  std::string name;
  uint64_t bytes = 0;
  bool journal = false;
  bool staged = false;  // a staged directory (receive_tree.hpp), removed with what it holds
};

// Bytes of the regular files beneath `dir_fd` and the newest ctime there (a
// staged directory's contents; no link followed). ctime, not mtime: a file
// completed in a staged directory already has its source's mtime, so only
// the ctime says when this transfer last touched it.
void usage_of(int dir_fd, uint64_t& bytes, std::chrono::system_clock::time_point& newest, int depth) {
  if (depth > 256) return;
  security::UniqueFd own(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* d = own.valid() ? ::fdopendir(own.get()) : nullptr;
  if (!d) return;
  (void)own.release();
  while (dirent* de = ::readdir(d)) {
    const std::string_view name = de->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    newest = std::max(newest, std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                  std::chrono::seconds(st.st_ctim.tv_sec) + std::chrono::nanoseconds(st.st_ctim.tv_nsec))));
    if (S_ISREG(st.st_mode)) bytes += static_cast<uint64_t>(st.st_size);
    if (!S_ISDIR(st.st_mode)) continue;
    security::UniqueFd sub(::openat(::dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub.valid()) usage_of(sub.get(), bytes, newest, depth + 1);
  }
  ::closedir(d);
}

// Removes everything beneath `dir_fd` (never following a link: each
// directory is opened by its name with O_NOFOLLOW). false if something stayed.
bool empty_dir(int dir_fd, int depth) {
  if (depth > 256) return false;
  security::UniqueFd own(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* d = own.valid() ? ::fdopendir(own.get()) : nullptr;
  if (!d) return false;
  (void)own.release();
  bool ok = true;
  std::vector<std::string> subdirs;
  while (dirent* de = ::readdir(d)) {
    const std::string name = de->d_name;
    if (name == "." || name == "..") continue;
    if (::unlinkat(::dirfd(d), name.c_str(), 0) == 0) continue;
    if (errno == EISDIR || errno == EPERM) subdirs.push_back(name);
    else if (errno != ENOENT) ok = false;
  }
  for (const auto& s : subdirs) {
    security::UniqueFd sub(::openat(::dirfd(d), s.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    ok = sub.valid() && empty_dir(sub.get(), depth + 1) && ::unlinkat(::dirfd(d), s.c_str(), AT_REMOVEDIR) == 0 && ok;
  }
  ::closedir(d);
  return ok;
}

struct Group {
  std::vector<Found> files;
  std::chrono::system_clock::time_point newest{};
};

void walk(int dir_fd, const std::string& rel, std::map<std::string, Group>& groups, int depth) {
  if (depth > 256) return;
  security::UniqueFd own(::dup(dir_fd));
  if (!own.valid()) return;
  DIR* d = ::fdopendir(own.get());
  if (!d) return;
  (void)own.release();  // the DIR owns it now
  ::rewinddir(d);         // the dup shares the offset of dir_fd: from the start
  std::vector<std::string> subdirs;
  while (dirent* de = ::readdir(d)) {
    const std::string name = de->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    bool journal = false;
    const std::string tag = tag_of(name, rel.empty(), journal);
    if (S_ISDIR(st.st_mode) && !(tag.size() == 16 && name.ends_with(".dir"))) {
      subdirs.push_back(name);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {  // a staged directory: counted and removed whole, not walked for more
      Group& g = groups[tag];
      Found f{rel, name, 0, false, true};
      auto mtime = std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_ctim.tv_sec) + std::chrono::nanoseconds(st.st_ctim.tv_nsec)));
      security::UniqueFd sub(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (sub.valid()) usage_of(sub.get(), f.bytes, mtime, 0);
      g.files.push_back(std::move(f));
      g.newest = std::max(g.newest, mtime);
      continue;
    }
    if (tag.empty() || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) continue;
    Group& g = groups[tag];
    g.files.push_back(Found{rel, name, static_cast<uint64_t>(st.st_size), journal});
    const auto mtime = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    g.newest = std::max(g.newest, mtime);
  }
  ::closedir(d);
  for (const auto& s : subdirs) {
    security::UniqueFd sub(::openat(dir_fd, s.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub.valid()) walk(sub.get(), rel.empty() ? s : rel + "/" + s, groups, depth + 1);
  }
}

std::string path_of(const Found& f) { return f.dir.empty() ? f.name : f.dir + "/" + f.name; }

// Unlinks `rel` beneath `dir_fd` without following a symlink on the way (a
// directory swapped for a link since the walk cannot lead elsewhere).
bool remove_beneath(int dir_fd, const std::string& rel, std::string& error) {
  auto p = security::RelativePath::parse(rel);
  if (!p) {
    error = p.error().message;
    return false;
  }
  auto parent = security::open_parent_beneath(dir_fd, p.value(), false);
  if (!parent) {
    error = parent.error().message;
    return false;
  }
  if (::unlinkat(parent.value().dir.get(), parent.value().leaf.c_str(), 0) == 0 || errno == ENOENT) return true;
  if (errno == EISDIR || errno == EPERM) {  // a staged directory
    security::UniqueFd d(::openat(parent.value().dir.get(), parent.value().leaf.c_str(),
                                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (d.valid() && empty_dir(d.get(), 0) &&
        ::unlinkat(parent.value().dir.get(), parent.value().leaf.c_str(), AT_REMOVEDIR) == 0)
      return true;
  }
  error = std::strerror(errno);
  return false;
}

}  // namespace

DebrisResult clean_debris(int dir_fd, const DebrisOptions& opts, std::chrono::system_clock::time_point now) {
  DebrisResult out;
  std::map<std::string, Group> groups;
  walk(dir_fd, "", groups, 0);
  for (auto& [tag, g] : groups) {
    auto entries = [&](const std::string& why) {
      std::vector<DebrisEntry> v;
      for (const auto& f : g.files) v.push_back(DebrisEntry{path_of(f), tag, f.bytes, why});
      return v;
    };
    auto keep = [&](const std::string& why) {
      for (auto& e : entries(why)) out.kept.push_back(std::move(e));
    };
    // Running: its receiver holds the journal's lock. Held here from now on, so none can start meanwhile.
    security::UniqueFd lock;
    bool running = false;
    for (const auto& f : g.files) {
      if (!f.journal) continue;
      lock.reset(::openat(dir_fd, f.name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      running = lock.valid() && ::flock(lock.get(), LOCK_EX | LOCK_NB) != 0;
    }
    if (running) {
      keep("in use: a running transfer holds its journal");
      continue;
    }
    const auto age = std::chrono::duration_cast<std::chrono::seconds>(now - g.newest);
    if (age < opts.older_than) {
      keep("last touched " + format_age(std::max(age, std::chrono::seconds(0))) + " ago, less than " +
           format_age(opts.older_than) + ": the same transfer may still resume");
      continue;
    }
    // Journal last: while it stands (locked), a receiver offered this transfer waits.
    std::stable_partition(g.files.begin(), g.files.end(), [](const Found& f) { return !f.journal; });
    bool all = true;
    for (const auto& f : g.files) {
      DebrisEntry e{path_of(f), tag, f.bytes, {}};
      if (!opts.dry_run && !remove_beneath(dir_fd, e.path, e.why)) {
        all = false;
        out.failed.push_back(std::move(e));
        continue;
      }
      out.removed_bytes += e.bytes;
      out.removed.push_back(std::move(e));
    }
    if (all) ++out.removed_transfers;
    if (!opts.dry_run) (void)::fsync(dir_fd);
  }
  return out;
}

std::optional<std::chrono::seconds> parse_age(std::string_view text) {
  uint64_t n = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || p == text.data()) return std::nullopt;
  const std::string_view unit(p, static_cast<size_t>(end - p));
  uint64_t scale = 0;
  if (unit == "s") scale = 1;
  else if (unit == "m" || unit == "min") scale = 60;
  else if (unit == "h") scale = 3600;
  else if (unit == "d") scale = 86400;
  else if (unit == "w") scale = 7 * 86400;
  else if (unit.empty() && n == 0) scale = 1;
  else return std::nullopt;
  if (n > UINT64_MAX / scale / 2) return std::nullopt;
  return std::chrono::seconds(static_cast<int64_t>(n * scale));
}

std::string format_age(std::chrono::seconds s) {
  const int64_t v = s.count();
  if (v != 0 && v % 86400 == 0) return std::to_string(v / 86400) + "d";
  if (v >= 86400) return std::to_string(v / 86400) + "d" + std::to_string(v % 86400 / 3600) + "h";
  if (v != 0 && v % 3600 == 0) return std::to_string(v / 3600) + "h";
  if (v >= 3600) return std::to_string(v / 3600) + "h" + std::to_string(v % 3600 / 60) + "min";
  if (v != 0 && v % 60 == 0) return std::to_string(v / 60) + "min";
  return std::to_string(v) + "s";
}

}  // namespace braid::files
