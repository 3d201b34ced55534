#include "safe_path.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "files.h"

namespace braid::security {
namespace {

Error invalid(std::string_view path, std::string_view why) {
  return make_error(Errc::path_invalid, "refusing path '" + printable_path(path) + "' from the peer: " + std::string(why));
}

// Finds the first of the first `upto` components of `path` that is a symlink,
// or among the first `dirs` one that is not a directory, to say exactly what
// is wrong.
Error diagnose(int root_fd, const RelativePath& path, std::size_t upto, std::size_t dirs, int err) {
  std::string prefix;
  for (std::size_t i = 0; i < upto && i < path.components().size(); ++i) {
    if (!prefix.empty()) prefix += '/';
    prefix += path.components()[i];
    struct stat st {};
    if (::fstatat(root_fd, prefix.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) break;
    if (S_ISLNK(st.st_mode))
      return make_error(Errc::path_symlink, "refusing to write '" + printable_path(path.str()) + "': '" +
                                                printable_path(prefix) +
                                                "' in the destination is a symlink, and braid never writes through symlinks");
    if (i < dirs && !S_ISDIR(st.st_mode))
      return make_error(Errc::path_not_directory, "cannot write '" + printable_path(path.str()) + "': '" +
                                                      printable_path(prefix) + "' in the destination is not a directory");
  }
  if (err == EXDEV)
    return make_error(Errc::path_escapes, "refusing to write '" + printable_path(path.str()) + "': it resolves outside the destination directory");
  return make_error(Errc::io_error, "cannot open '" + printable_path(path.str()) + "' in the destination: " + errno_text(err));
}

// The error for a failed open of `path`: a symlink or non-directory in the
// way comes first (with O_EXCL a planted symlink shows up as EEXIST).
Error open_error(int root_fd, const RelativePath& path, int err) {
  Error e = diagnose(root_fd, path, path.components().size(), path.components().size() - 1, err);
  if (e.code == Errc::io_error && err == EEXIST)
    return make_error(Errc::io_error, in_quotes(printable_path(path.str())) + " already exists in the destination");
  return e;
}

// Opens component `name` of `dir` as a directory, refusing symlinks.
int open_dir_nofollow(int dir, const std::string& name) {
  return ::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// Walks (and with `create`, makes) the first `count` components.
Result<UniqueFd> walk(int root_fd, const RelativePath& path, std::size_t count, bool create, mode_t mode) {
  UniqueFd cur(::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!cur.valid()) return make_error(Errc::io_error, "cannot open the destination directory: " + errno_text(errno));
  for (std::size_t i = 0; i < count; ++i) {
    const std::string& name = path.components()[i];
    if (create && ::mkdirat(cur.get(), name.c_str(), mode) != 0 && errno != EEXIST)
      return make_error(Errc::io_error, "cannot create directory '" + printable_path(name) + "' for '" +
                                            printable_path(path.str()) + "': " + errno_text(errno));
    UniqueFd next(open_dir_nofollow(cur.get(), name));
    if (!next.valid()) return diagnose(root_fd, path, i + 1, i + 1, errno);
    cur = std::move(next);
  }
  return cur;
}

long sys_openat2(int dirfd, const char* path, open_how* how) {
  return ::syscall(SYS_openat2, dirfd, path, how, sizeof(open_how));
}

}  // namespace

Result<RelativePath> RelativePath::parse(std::string_view bytes) {
  if (bytes.empty()) return invalid(bytes, "it is empty");
  if (bytes.find('\0') != std::string_view::npos) return invalid(bytes, "it contains a NUL byte");
  if (bytes.front() == '/') return invalid(bytes, "it is absolute; a peer may send only paths relative to the destination");
  if (bytes.size() > kMaxPathLength) return invalid(bytes, "it is longer than " + std::to_string(kMaxPathLength) + " bytes");
  RelativePath p;
  std::size_t start = 0;
  for (;;) {
    std::size_t slash = bytes.find('/', start);
    std::string_view c = bytes.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (c.empty()) return invalid(bytes, "it has an empty component (a doubled or trailing '/')");
    if (c == "..") return invalid(bytes, "it has a '..' component, which could climb out of the destination");
    if (c == ".") return invalid(bytes, "it has a '.' component");
    if (c.size() > kMaxNameLength)
      return invalid(bytes, "a component is longer than " + std::to_string(kMaxNameLength) + " bytes");
    p.components_.emplace_back(c);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  p.joined_ = std::string(bytes);
  return p;
}

std::string printable_path(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c < 0x20 || c == 0x7f || c == '\\') {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

Result<UniqueFd> make_dirs_beneath(int root_fd, const RelativePath& path, mode_t mode) {
  return walk(root_fd, path, path.components().size(), true, mode);
}

Result<ParentDir> open_parent_beneath(int root_fd, const RelativePath& path, bool create_dirs, mode_t dir_mode) {
  auto dir = walk(root_fd, path, path.components().size() - 1, create_dirs, dir_mode);
  if (!dir) return dir.error();
  return ParentDir{std::move(dir.value()), path.components().back()};
}

Result<UniqueFd> open_beneath(int root_fd, const RelativePath& path, int flags, mode_t mode, Resolver resolver) {
  flags |= O_NOFOLLOW | O_CLOEXEC;
  if (resolver != Resolver::per_component) {
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags);
    how.mode = (flags & O_CREAT) != 0 ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd = sys_openat2(root_fd, path.str().c_str(), &how);
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    int err = errno;
    // ENOSYS: kernel before 5.6; EPERM/E2BIG: a seccomp filter or an older
    // struct size. Then (in automatic mode) walk component by component.
    bool unsupported = err == ENOSYS || err == EPERM || err == E2BIG;
    if (!unsupported || resolver == Resolver::openat2_only) return open_error(root_fd, path, err);
  }
  auto parent = open_parent_beneath(root_fd, path, false);
  if (!parent) return parent.error();
  UniqueFd fd(::openat(parent.value().dir.get(), parent.value().leaf.c_str(), flags, mode));
  if (!fd.valid()) return open_error(root_fd, path, errno);
  return fd;
}

}  // namespace braid::security
