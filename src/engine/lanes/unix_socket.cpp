#include "engine/lanes/unix_socket.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace braid::lanes {

namespace {

constexpr int kBacklog = 64;

bool address_of(const std::string& path, sockaddr_un& a, std::string& error) {
  a = {};
  a.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a.sun_path) {
    error = "a Unix socket path must have 1 to " + std::to_string(sizeof a.sun_path - 1) + " bytes: '" + path + "'";
    return false;
  }
  std::memcpy(a.sun_path, path.data(), path.size());
  return true;
}

// A stream socket and the address of `path` for it (invalid fd: `error`).
security::UniqueFd stream_socket_for(const std::string& path, sockaddr_un& a, std::string& error) {
  if (!address_of(path, a, error)) return {};
  security::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) error = std::string("socket: ") + std::strerror(errno);
  return fd;
}

}  // namespace

std::string unix_path_of(const std::string& spec) {
  return spec.rfind("unix:", 0) == 0 ? spec.substr(5) : std::string();
}

security::UniqueFd listen_unix(const std::string& path, std::string& error) {
  sockaddr_un a;
  security::UniqueFd fd = stream_socket_for(path, a, error);
  if (!fd.valid()) return {};
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    // A socket file: stale if nobody answers there (an earlier receiver that died).
    std::string ignored;
    if (connect_unix(path, ignored).valid()) {
      error = "cannot listen on unix:" + path + ": another process listens there";
      return {};
    }
    ::unlink(path.c_str());
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 || ::listen(fd.get(), kBacklog) != 0) {
    error = "cannot listen on unix:" + path + ": " + std::strerror(errno);
    return {};
  }
  return fd;
}

security::UniqueFd connect_unix(const std::string& path, std::string& error) {
  sockaddr_un a;
  security::UniqueFd fd = stream_socket_for(path, a, error);
  if (!fd.valid()) return {};
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    error = "cannot connect to unix:" + path + ": " + std::strerror(errno);
    return {};
  }
  return fd;
}

bool is_unix_socket(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 && ss.ss_family == AF_UNIX;
}

std::string unix_socket_name(int fd) {
  sockaddr_un a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || len <= sizeof(sa_family_t) || !a.sun_path[0])
    return "unix";
  return std::string("unix:") + std::string(a.sun_path, strnlen(a.sun_path, sizeof a.sun_path));
}

}  // namespace braid::lanes
