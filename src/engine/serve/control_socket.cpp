#include "engine/serve/control_socket.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "engine/security/files.h"

namespace braid::serve {
namespace {

// A request is a line of JSON of a few hundred bytes; a client that sends
// nothing for this long is dropped so it cannot hold the (only) thread.
constexpr int kClientTimeoutMs = 5000;
constexpr size_t kMaxRequest = 64 * 1024;

bool make_address(const std::filesystem::path& path, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  if (p.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, p.data(), p.size());
  return true;
}

// One line, or nothing if the peer is silent, too long or gone.
std::optional<std::string> read_line(int fd) {
  std::string buf;
  char chunk[4096];
  while (buf.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kClientTimeoutMs) <= 0) return std::nullopt;
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) return buf.empty() ? std::nullopt : std::optional(buf);
    buf.append(chunk, static_cast<size_t>(n));
    if (buf.size() > kMaxRequest) return std::nullopt;
  }
  return buf.substr(0, buf.find('\n'));
}

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace

ControlServer::~ControlServer() { stop(); }

std::string ControlServer::start(const std::filesystem::path& path, ControlHandler handler) {
  path_ = path;
  handler_ = std::move(handler);
  sockaddr_un addr{};
  if (!make_address(path, addr)) return "the control socket's path is too long: " + path.string();
  listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener_.valid()) return "socket: " + security::errno_text(errno);
  ::unlink(path.c_str());  // a stale one (serve.lock says no other serve runs)
  // Created 0600 from the start: never a moment when others could connect.
  const mode_t old = ::umask(0177);
  const int rc = ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::umask(old);
  if (rc != 0) return "cannot listen on " + path.string() + ": " + security::errno_text(errno);
  if (::listen(listener_.get(), 16) != 0) return "listen: " + security::errno_text(errno);
  wake_.reset(::eventfd(0, EFD_CLOEXEC));
  thread_ = std::thread([this] { loop(); });
  return {};
}

void ControlServer::stop() {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)::write(wake_.get(), &one, sizeof one);
  thread_.join();
  ::unlink(path_.c_str());
}

void ControlServer::loop() {
  for (;;) {
    pollfd fds[2] = {{listener_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) return;
    security::UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client.valid()) continue;
    nlohmann::json answer;
    const auto line = read_line(client.get());
    const auto request = line ? nlohmann::json::parse(*line, nullptr, false) : nlohmann::json();
    if (!line || request.is_discarded() || !request.is_object()) answer = {{"error", "not a JSON request"}};
    else answer = handler_(request);
    write_all(client.get(), answer.dump() + "\n");
  }
}

std::variant<nlohmann::json, std::string> control_request(const std::filesystem::path& path,
                                                          const nlohmann::json& request) {
  sockaddr_un addr{};
  if (!make_address(path, addr)) return "the control socket's path is too long: " + path.string();
  security::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return "cannot reach braid serve at " + path.string() + ": " + security::errno_text(errno) +
           " (is it running with this state directory?)";
  write_all(fd.get(), request.dump() + "\n");
  const auto line = read_line(fd.get());
  if (!line) return std::string("braid serve did not answer");
  auto answer = nlohmann::json::parse(*line, nullptr, false);
  if (answer.is_discarded()) return std::string("braid serve answered something that is not JSON");
  return answer;
}

}  // namespace braid::serve
