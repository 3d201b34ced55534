// Scratch directories for the integration tests: on tmpfs when there is one
// (fast, and no disk wear), removed at the end of the test.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace braid::testing {

class ScratchDir {
 public:
  ScratchDir() {
    std::string base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path().string();
    std::string tmpl = base + "/braid-it-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& p) const { return path_ / p; }

 private:
  std::filesystem::path path_;
};

/// `size` bytes of seeded pseudo-random data.
inline void write_random_file(const std::filesystem::path& p, size_t size, uint64_t seed) {
  std::filesystem::create_directories(p.parent_path());
  std::mt19937_64 rng(seed);
  std::string data(size, '\0');
  for (size_t i = 0; i + 8 <= size; i += 8) {
    uint64_t v = rng();
    std::memcpy(&data[i], &v, 8);
  }
  for (size_t i = size - size % 8; i < size; ++i) data[i] = static_cast<char>(rng());
  std::ofstream(p, std::ios::binary) << data;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace braid::testing
