// Does MSG_ZEROCOPY pay for braid's frame sizes over loopback on this
// kernel? Sends BYTES over one loopback TCP connection in FRAME-sized
// writes, once with plain send() and once with MSG_ZEROCOPY (a ring of frame
// buffers, each reused only after the kernel's completion for it came back on
// the error queue), and prints wall time, the CPU seconds of the sending and
// receiving threads (RUSAGE_THREAD), and how many completions the kernel
// marked "copied" (SO_EE_CODE_ZEROCOPY_COPIED: it fell back to a copy).
//
//   c++ -O2 -std=c++20 -pthread bench/loopback/zerocopy_probe.cpp -o /tmp/zerocopy_probe
//   /tmp/zerocopy_probe [MiB=1024] [FRAME_KiB=256]
#include <arpa/inet.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

double thread_cpu() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

struct Result {
  double wall = 0, send_cpu = 0, recv_cpu = 0;
  uint64_t completions = 0, copied = 0;
};

// Reads zerocopy completions; returns the highest send index now complete + 1.
uint32_t drain_completions(int fd, bool block, Result& r, uint32_t done) {
  for (;;) {
    if (block) {
      pollfd p{fd, 0, 0};  // POLLERR is always reported
      poll(&p, 1, 100);
    }
    char control[128];
    msghdr m{};
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return done;
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      auto* e = reinterpret_cast<sock_extended_err*>(CMSG_DATA(c));
      if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY) continue;
      r.completions += e->ee_data - e->ee_info + 1;
      if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) r.copied += e->ee_data - e->ee_info + 1;
      if (e->ee_data + 1 > done) done = e->ee_data + 1;
    }
    block = false;
  }
}

Result run(uint64_t bytes, size_t frame, bool zerocopy) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t al = sizeof a;
  getsockname(ls, reinterpret_cast<sockaddr*>(&a), &al);
  listen(ls, 1);
  Result r;
  std::thread reader([&] {
    int c = accept(ls, nullptr, nullptr);
    std::vector<char> buf(frame);
    const double c0 = thread_cpu();
    while (recv(c, buf.data(), buf.size(), 0) > 0) {
    }
    r.recv_cpu = thread_cpu() - c0;
    close(c);
  });
  int s = socket(AF_INET, SOCK_STREAM, 0);
  connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  int one = 1;
  if (zerocopy && setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) != 0) {
    perror("SO_ZEROCOPY");
    std::exit(1);
  }
  constexpr uint32_t kRing = 8;
  std::vector<std::vector<char>> ring(kRing, std::vector<char>(frame, 'x'));
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = thread_cpu();
  uint32_t sent = 0, done = 0;  // zerocopy sends issued and completed (each send() is one index)
  for (uint64_t left = bytes; left > 0;) {
    const size_t n = std::min<uint64_t>(frame, left);
    if (zerocopy)
      while (sent - done >= kRing) done = drain_completions(s, true, r, done);
    const char* p = ring[sent % kRing].data();
    for (size_t off = 0; off < n;) {
      ssize_t w = send(s, p + off, n - off, zerocopy ? MSG_ZEROCOPY : 0);
      if (w < 0 && zerocopy && errno == ENOBUFS) {  // too much pinned: wait for completions
        done = drain_completions(s, true, r, done);
        continue;
      }
      if (w < 0) {
        perror("send");
        std::exit(1);
      }
      off += static_cast<size_t>(w);
      if (zerocopy && off < n) ++sent;  // a partial send is its own index
    }
    ++sent;
    left -= n;
    if (zerocopy) done = drain_completions(s, false, r, done);
  }
  while (zerocopy && done < sent) done = drain_completions(s, true, r, done);
  r.send_cpu = thread_cpu() - c0;
  shutdown(s, SHUT_WR);
  reader.join();
  r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  close(s);
  close(ls);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t bytes = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024) << 20;
  const size_t frame = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 256) << 10;
  const double gib = static_cast<double>(bytes) / (1 << 30);
  for (int round = 0; round < 3; ++round)
    for (bool zc : {false, true}) {
      const Result r = run(bytes, frame, zc);
      std::printf("%-9s %4zu KiB frames: %.2f GB/s, CPU-s/GiB send %.3f recv %.3f both %.3f; completions %llu, copied %llu\n",
                  zc ? "zerocopy" : "copy", frame >> 10, bytes / r.wall / 1e9, r.send_cpu / gib, r.recv_cpu / gib,
                  (r.send_cpu + r.recv_cpu) / gib, static_cast<unsigned long long>(r.completions),
                  static_cast<unsigned long long>(r.copied));
    }
}
