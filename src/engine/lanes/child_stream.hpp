// A byte stream to a child process: the command runs under /bin/sh with its
// stdin and stdout on our stream — one end of a socketpair, or the slave of
// a pty in raw mode (a serial-like line: what a USB accessory, an RFCOMM
// socket or a modem looks like). `--lane exec:ssh host braid relay …`
// makes ssh one more lane, through jump hosts and all.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "engine/security/unique_fd.h"

namespace braid::lanes {

/// The running child; destroying it ends the child (SIGTERM, then reaped).
class ChildProcess {
 public:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

struct ChildStream {
  security::UniqueFd fd;  // our end: read and write
  std::shared_ptr<ChildProcess> child;
};

/// Starts `command`; an invalid fd and `error` if it cannot.
ChildStream spawn_child_stream(const std::string& command, bool pty, std::string& error);

}  // namespace braid::lanes
