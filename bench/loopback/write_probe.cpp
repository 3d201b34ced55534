// How should the receiver put a verified 1 MiB piece into a fresh tmpfs
// file? Each variant moves 1 GiB from a 64 MiB "socket" ring into a new file
// in DIR, piece by piece, and produces each piece's bytes with one memcpy (standing in for
// the AES-GCM open, which writes its output wherever it is pointed):
//
//   pwrite      open into the lane's piece buffer (reused, hot), then pwrite
//               it (what braid does: the kernel copies buffer -> page cache)
//   pwrite4     the same, 4 MiB per pwrite (bigger writes)
//   mmap-fault  open straight into a mapping of the piece's place in the file
//               (plain write faults), munmap after the piece
//   mmap-pop    the same with MADV_POPULATE_WRITE of the piece first (one
//               call maps the 256 pages)
//   mmap-whole  one mapping of the whole file, MADV_POPULATE_WRITE per piece
//               (no mmap/munmap per piece)
//
// CPU seconds (user + sys) of the process per GiB, variants interleaved, 3
// repetitions; the file is unlinked after each.
//
//   c++ -O2 -std=c++20 bench/loopback/write_probe.cpp -o /tmp/write_probe && /tmp/write_probe /dev/shm
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace {
double cpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/dev/shm";
  const size_t piece = 1 << 20, total = size_t{1} << 30, ring = 64 << 20;
  std::vector<unsigned char> src(ring), buf(4 * piece);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + (i >> 12));
  const char* names[] = {"pwrite", "pwrite4", "mmap-fault", "mmap-pop", "mmap-whole"};
  for (int rep = 0; rep < 3; ++rep) {
    for (int v = 0; v < 5; ++v) {
      const std::string path = dir + "/write_probe.part";
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) return 1;
      if (v >= 2 && ::ftruncate(fd, static_cast<off_t>(total)) != 0) return 1;  // a mapping needs the size
      unsigned char* whole = nullptr;
      if (v == 4) {
        whole = static_cast<unsigned char*>(::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
        if (whole == MAP_FAILED) return 1;
      }
      const double t0 = cpu();
      const size_t step = v == 1 ? 4 * piece : piece;
      for (size_t at = 0; at < total; at += step) {
        const unsigned char* from = src.data() + at % ring;
        if (v <= 1) {
          std::memcpy(buf.data(), from, step);
          if (::pwrite(fd, buf.data(), step, static_cast<off_t>(at)) != static_cast<ssize_t>(step)) return 1;
        } else if (v == 4) {
          if (::madvise(whole + at, piece, MADV_POPULATE_WRITE) != 0) return 1;
          std::memcpy(whole + at, from, piece);
        } else {
          auto* m = static_cast<unsigned char*>(
              ::mmap(nullptr, piece, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(at)));
          if (m == MAP_FAILED) return 1;
          if (v == 3 && ::madvise(m, piece, MADV_POPULATE_WRITE) != 0) return 1;
          std::memcpy(m, from, piece);
          ::munmap(m, piece);
        }
      }
      if (whole) ::munmap(whole, total);
      const double s = cpu() - t0;
      ::close(fd);
      ::unlink(path.c_str());
      std::printf("%-11s %.3f CPU-s per GiB\n", names[v], s);
      std::fflush(stdout);
    }
  }
}
