#include "engine/files/source_tree.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

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

class Walker {
 public:
  explicit Walker(bool follow) : follow_(follow) {}

  bool add(const std::string& local, const std::string& rel) {
    struct stat st {};
    int rc = follow_ ? ::stat(local.c_str(), &st) : ::lstat(local.c_str(), &st);
    if (rc != 0) return fail("cannot read '" + local + "': " + std::strerror(errno));
    wire::ManifestEntry e;
    e.path = rel;
    e.mode = st.st_mode & 07777;
    e.mtime_sec = st.st_mtim.tv_sec;
    e.mtime_nsec = static_cast<uint32_t>(st.st_mtim.tv_nsec);
    if (S_ISREG(st.st_mode)) {
      e.kind = wire::EntryKind::file;
      e.size = static_cast<uint64_t>(st.st_size);
      if (::access(local.c_str(), R_OK) != 0) return fail("cannot read '" + local + "': " + std::strerror(errno));
      out_.total_bytes += e.size;
      ++out_.file_count;
      push(std::move(e), local);
      return true;
    }
    if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = ::readlink(local.c_str(), target.data(), target.size());
      if (n < 0) return fail("cannot read the link '" + local + "': " + std::strerror(errno));
      target.resize(static_cast<size_t>(n));
      e.kind = wire::EntryKind::symlink;
      e.link_target = std::move(target);
      push(std::move(e), local);
      return true;
    }
    if (S_ISDIR(st.st_mode)) {
      e.kind = wire::EntryKind::directory;
      push(std::move(e), local);
      return walk_dir(local, rel);
    }
    return fail("'" + local + "' is not a regular file, directory or symlink; braid does not send it");
  }

  SourceTree take() { return std::move(out_); }
  const std::string& error() const { return error_; }

 private:
  bool walk_dir(const std::string& local, const std::string& rel) {
    DIR* d = ::opendir(local.c_str());
    if (!d) return fail("cannot list '" + local + "': " + std::strerror(errno));
    std::vector<std::string> names;
    while (dirent* de = ::readdir(d)) {
      std::string n = de->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto& n : names)
      if (!add(local + "/" + n, rel + "/" + n)) return false;
    return true;
  }

  void push(wire::ManifestEntry e, const std::string& local) {
    out_.entries.push_back(std::move(e));
    out_.local_paths.push_back(local);
  }

  bool fail(std::string msg) {
    error_ = std::move(msg);
    return false;
  }

  bool follow_;
  SourceTree out_;
  std::string error_;
};

}  // namespace

ScanResult scan_sources(const std::vector<std::string>& paths, bool follow_symlinks) {
  Walker w(follow_symlinks);
  std::set<std::string> tops;
  for (const auto& p : paths) {
    std::string leaf = last_component(p);
    if (leaf.empty() || leaf == "/") return {{}, "cannot send '" + p + "': it has no name to arrive under"};
    if (!tops.insert(leaf).second)
      return {{}, "two PATHs would arrive under the same name '" + leaf + "'; send them separately"};
    const std::string& local = p;
    if (!w.add(local, leaf)) return {{}, w.error()};
  }
  return {w.take(), {}};
}

}  // namespace braid::files
