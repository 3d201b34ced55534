// A TUN device created inside a given network namespace. The device lives
// as long as this object's file descriptor: when the emulator exits, its
// interfaces disappear with it, which is what makes `netlab down` safe.
#pragma once

#include <string>

namespace netlab {

class TunDevice {
 public:
  /// Creates interface `ifname` in the namespace whose handle is `netns_fd`
  /// (an open /run/netns/NAME), sets its MTU and brings it up. The calling
  /// thread returns to its own namespace before this returns. On failure
  /// fd() is -1 and error() says why.
  static TunDevice create(const std::string& ifname, int netns_fd, unsigned mtu);

  TunDevice() = default;
  TunDevice(TunDevice&& other) noexcept;
  TunDevice& operator=(TunDevice&& other) noexcept;
  TunDevice(const TunDevice&) = delete;
  TunDevice& operator=(const TunDevice&) = delete;
  ~TunDevice();

  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  const std::string& error() const { return error_; }

  /// Lets the kernel hand us TCP super-packets with partial checksums
  /// (TUNSETOFFLOAD). Without it the kernel segments and checksums first.
  bool set_gso(bool on);

 private:
  int fd_ = -1;
  std::string name_;
  std::string error_;
};

}  // namespace netlab
