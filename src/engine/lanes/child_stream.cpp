#include "engine/lanes/child_stream.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace braid::lanes {

ChildProcess::~ChildProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  // A child that ignores SIGTERM gets a moment, then SIGKILL: a lane's end
  // must not hang on it.
  for (int i = 0; i < 50; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

ChildStream spawn_child_stream(const std::string& command, bool pty, std::string& error) {
  ChildStream out;
  int ours = -1, theirs = -1;
  if (pty) {
    ours = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (ours < 0 || ::grantpt(ours) != 0 || ::unlockpt(ours) != 0) {
      error = std::string("cannot open a pty: ") + std::strerror(errno);
      if (ours >= 0) ::close(ours);
      return out;
    }
    const char* name = ::ptsname(ours);
    theirs = name ? ::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
    termios t{};
    if (theirs < 0 || ::tcgetattr(theirs, &t) != 0) {
      error = std::string("cannot open the pty's slave: ") + std::strerror(errno);
      ::close(ours);
      if (theirs >= 0) ::close(theirs);
      return out;
    }
    ::cfmakeraw(&t);  // every byte as it is: no echo, no line editing, no CR/LF mapping
    ::tcsetattr(theirs, TCSANOW, &t);
  } else {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      error = std::string("socketpair: ") + std::strerror(errno);
      return out;
    }
    ours = sv[0];
    theirs = sv[1];
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    ::close(ours);
    ::close(theirs);
    return out;
  }
  if (pid == 0) {
    if (pty) ::setsid();
    ::dup2(theirs, 0);
    ::dup2(theirs, 1);
    ::signal(SIGPIPE, SIG_DFL);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(theirs);
  out.fd.reset(ours);
  out.child = std::make_shared<ChildProcess>(pid);
  return out;
}

}  // namespace braid::lanes
