#include "files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "unique_fd.h"

namespace braid::security {
namespace fs = std::filesystem;

std::string errno_text(int err) {
  char buf[128];
  // GNU strerror_r returns the message pointer (maybe not buf).
  const char* s = strerror_r(err, buf, sizeof buf);
  return std::string(s) + " (errno " + std::to_string(err) + ")";
}

namespace {

Error sys_error(std::string_view what, const fs::path& path, int err) {
  return make_error(Errc::io_error, std::string(what) + " '" + path.string() + "': " + errno_text(err));
}

Status write_all(int fd, std::string_view data, const fs::path& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("cannot write", path, errno);
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fsync(fd) != 0) return sys_error("cannot fsync", path, errno);
  return {};
}

// Writes a fresh temp file next to `path`; returns its name.
Result<fs::path> write_temp(const fs::path& path, std::string_view data, mode_t mode) {
  unsigned char rnd[8];
  if (RAND_bytes(rnd, sizeof rnd) != 1) return make_error(Errc::crypto_error, "RAND_bytes failed");
  std::string suffix = ".tmp.";
  for (unsigned char b : rnd) suffix += "0123456789abcdef"[b & 15];
  fs::path tmp = path;
  tmp += suffix;
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd.valid()) return sys_error("cannot create", tmp, errno);
  // The umask may have removed bits; set exactly what the caller asked for.
  if (::fchmod(fd.get(), mode) != 0) return sys_error("cannot chmod", tmp, errno);
  if (Status s = write_all(fd.get(), data, tmp); !s) {
    ::unlink(tmp.c_str());
    return s.error();
  }
  return tmp;
}

void fsync_dir(const fs::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.valid()) ::fsync(fd.get());
}

}  // namespace

Result<fs::path> default_config_dir() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg != nullptr && xdg[0] == '/') return fs::path(xdg) / "braid";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return fs::path(home) / ".config" / "braid";
  return make_error(Errc::config_dir_unavailable,
                    "cannot find a config directory: set XDG_CONFIG_HOME or HOME to an absolute path");
}

Status ensure_private_dir(const fs::path& dir) {
  std::error_code ec;
  if (dir.has_parent_path()) fs::create_directories(dir.parent_path(), ec);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return sys_error("cannot create directory", dir, errno);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return sys_error("cannot stat", dir, errno);
  if (!S_ISDIR(st.st_mode))
    return make_error(Errc::insecure_permissions, in_quotes(dir.string()) + " is not a directory (a symlink?); braid keeps its keys there");
  if (st.st_uid != ::geteuid())
    return make_error(Errc::insecure_permissions, in_quotes(dir.string()) + " belongs to another user; braid will not keep keys there");
  if ((st.st_mode & 07777) != 0700 && ::chmod(dir.c_str(), 0700) != 0) return sys_error("cannot chmod 0700", dir, errno);
  return {};
}

Result<std::optional<std::string>> read_small_file(const fs::path& path, bool must_be_private) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::optional<std::string>{};
    return sys_error("cannot open", path, errno);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("cannot stat", path, errno);
  if (!S_ISREG(st.st_mode)) return make_error(Errc::bad_file_format, in_quotes(path.string()) + " is not a regular file");
  if (must_be_private && (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0))
    return make_error(Errc::insecure_permissions,
                      "private key '" + path.string() + "' is accessible by others; fix it with: chmod 600 '" +
                          path.string() + "' (and check who owns it)");
  constexpr off_t kMax = 1 << 20;  // config files are tiny; refuse to slurp something huge
  if (st.st_size > kMax) return make_error(Errc::bad_file_format, in_quotes(path.string()) + " is too large");
  std::string data;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("cannot read", path, errno);
    if (n == 0) break;
    data.append(buf, static_cast<std::size_t>(n));
    if (data.size() > static_cast<std::size_t>(kMax)) return make_error(Errc::bad_file_format, in_quotes(path.string()) + " is too large");
  }
  return std::optional<std::string>(std::move(data));
}

Result<bool> create_file_exclusive(const fs::path& path, std::string_view data, mode_t mode) {
  auto tmp = write_temp(path, data, mode);
  if (!tmp) return tmp.error();
  // link() fails with EEXIST instead of replacing: the first writer wins.
  int rc = ::link(tmp.value().c_str(), path.c_str());
  int err = errno;
  ::unlink(tmp.value().c_str());
  if (rc != 0) {
    if (err == EEXIST) return false;
    return sys_error("cannot create", path, err);
  }
  fsync_dir(path.parent_path());
  return true;
}

Status replace_file(const fs::path& path, std::string_view data, mode_t mode) {
  auto tmp = write_temp(path, data, mode);
  if (!tmp) return tmp.error();
  if (::rename(tmp.value().c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.value().c_str());
    return sys_error("cannot replace", path, err);
  }
  fsync_dir(path.parent_path());
  return {};
}

}  // namespace braid::security
