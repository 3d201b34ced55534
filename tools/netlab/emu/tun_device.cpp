#include "tun_device.hpp"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace netlab {
namespace {

std::string os_error(const std::string& what) { return what + ": " + std::strerror(errno); }

/// Enters a namespace for the lifetime of the object. Namespaces are per
/// thread; the emulator creates its devices before it starts any thread.
class NamespaceVisit {
 public:
  explicit NamespaceVisit(int target) {
    home_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home_ < 0) {
      error_ = os_error("open own network namespace");
    } else if (setns(target, CLONE_NEWNET) != 0) {
      error_ = os_error("enter network namespace");
    }
  }
  ~NamespaceVisit() {
    if (home_ >= 0) {
      // Failing to return would leave the emulator in the lab: nothing sane to do.
      if (setns(home_, CLONE_NEWNET) != 0) std::abort();
      close(home_);
    }
  }
  NamespaceVisit(const NamespaceVisit&) = delete;
  NamespaceVisit& operator=(const NamespaceVisit&) = delete;
  const std::string& error() const { return error_; }

 private:
  int home_ = -1;
  std::string error_;
};

std::string configure_interface(const std::string& name, unsigned mtu) {
  const int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);  // in the visited namespace
  if (sock < 0) return os_error("socket");
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  std::string error;
  ifr.ifr_mtu = static_cast<int>(mtu);
  if (ioctl(sock, SIOCSIFMTU, &ifr) != 0) error = os_error("set MTU of " + name);
  if (error.empty() && ioctl(sock, SIOCGIFFLAGS, &ifr) != 0) error = os_error("get flags of " + name);
  ifr.ifr_flags |= IFF_UP;
  if (error.empty() && ioctl(sock, SIOCSIFFLAGS, &ifr) != 0) error = os_error("bring up " + name);
  close(sock);
  return error;
}

}  // namespace

TunDevice TunDevice::create(const std::string& ifname, int netns_fd, unsigned mtu) {
  TunDevice dev;
  dev.name_ = ifname;
  NamespaceVisit visit(netns_fd);
  if (!visit.error().empty()) {
    dev.error_ = visit.error();
    return dev;
  }
  // The device is created in the namespace of the opening thread.
  dev.fd_ = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (dev.fd_ < 0) {
    dev.error_ = os_error("open /dev/net/tun");
    return dev;
  }
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
  if (ioctl(dev.fd_, TUNSETIFF, &ifr) != 0) {
    dev.error_ = os_error("create TUN device " + ifname);
  } else if (std::string e = configure_interface(ifname, mtu); !e.empty()) {
    dev.error_ = e;
  }
  if (!dev.error_.empty()) {
    close(dev.fd_);
    dev.fd_ = -1;
  }
  return dev;
}

bool TunDevice::set_gso(bool on) {
  // UDP segmentation offload (Linux ≥ 6.2; the constants are newer than
  // Debian 12's headers): UDP_SEGMENT super-packets then cross the lab whole,
  // as TCP's do, instead of costing the emulator a read and a write per
  // datagram — on real NICs the hardware or the driver segments them too.
  constexpr unsigned kTunUso4 = 0x20, kTunUso6 = 0x40;
  const unsigned tcp = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
  if (on && ioctl(fd_, TUNSETOFFLOAD, tcp | kTunUso4 | kTunUso6) == 0) return true;
  const unsigned flags = on ? tcp : 0u;
  if (ioctl(fd_, TUNSETOFFLOAD, flags) != 0) {
    error_ = os_error("set offloads of " + name_);
    return false;
  }
  return true;
}

TunDevice::TunDevice(TunDevice&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), name_(std::move(other.name_)), error_(std::move(other.error_)) {}

TunDevice& TunDevice::operator=(TunDevice&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    name_ = std::move(other.name_);
    error_ = std::move(other.error_);
  }
  return *this;
}

TunDevice::~TunDevice() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace netlab
