// A scratch directory for the receiver's file tests: a root made with
// mkdtemp, with `target/` in it opened as the transfer's root fd, removed
// with everything in it at the end. Paths are relative to the root, so a
// test can put things beside the target too (outside/, a link's end).
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/wire/messages.hpp"

namespace braid::files::testing {

class ScratchTarget {
 public:
  explicit ScratchTarget(const std::string& name) {
    std::string tmpl = std::filesystem::temp_directory_path().string() + "/braid-" + name + "-XXXXXX";
    root_ = ::mkdtemp(tmpl.data());
    std::filesystem::create_directories(root_ / "target");
    fd_ = ::open((root_ / "target").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~ScratchTarget() {
    ::close(fd_);
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  ScratchTarget(const ScratchTarget&) = delete;
  ScratchTarget& operator=(const ScratchTarget&) = delete;

  std::filesystem::path at(const std::string& rel) const { return root_ / rel; }
  /// Writes `text` at `rel`, making its parents.
  void put(const std::string& rel, const std::string& text) const {
    const std::filesystem::path p = at(rel);
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  /// The target's fd (`target/` under the root).
  int fd() const { return fd_; }

 private:
  std::filesystem::path root_;
  int fd_ = -1;
};

/// An offer's entry: a file of `size` bytes (0644) or a directory (0755).
inline wire::ManifestEntry entry(wire::EntryKind kind, const std::string& path, uint64_t size = 0) {
  wire::ManifestEntry e;
  e.kind = kind;
  e.path = path;
  e.size = size;
  e.mode = kind == wire::EntryKind::directory ? 0755 : 0644;
  return e;
}

}  // namespace braid::files::testing
