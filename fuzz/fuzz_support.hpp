// What the fuzz targets share: a property check that stops the run, and a
// private scratch directory for the targets whose decoder reads a file.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <system_error>

namespace braid::fuzz {

/// A broken property is a finding: print it and abort, so libFuzzer keeps
/// the input as a crash file. Independent of NDEBUG.
[[noreturn]] inline void property_failed(const char* what, const char* file, int line) {
  std::fprintf(stderr, "\nbraid fuzz: property failed: %s (%s:%d)\n", what, file, line);
  std::abort();
}

#define FUZZ_CHECK(cond) ((cond) ? (void)0 : ::braid::fuzz::property_failed(#cond, __FILE__, __LINE__))

inline std::span<const uint8_t> bytes_of(const uint8_t* data, size_t size) { return {data, size}; }

/// A directory of this process's own, removed when the process exits. On
/// tmpfs when there is one: the targets that read files write one per input.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string tmpl = (access("/dev/shm", W_OK) == 0 ? std::string("/dev/shm") : std::filesystem::temp_directory_path().string()) +
                       "/braid-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data())) property_failed("cannot create a scratch directory", __FILE__, __LINE__);
    std::filesystem::path p(tmpl);
    static struct Cleanup {
      std::filesystem::path p;
      ~Cleanup() {
        std::error_code ec;
        std::filesystem::remove_all(p, ec);
      }
    } cleanup{p};
    return p;
  }();
  return dir;
}

}  // namespace braid::fuzz
