// The sender's view of what it sends: the PATHs given on the command line
// walked into a manifest (files, directories, symlinks with their modes and
// mtimes), each entry remembering where it lives on this machine.
//
// Names are taken byte for byte (spaces, newlines, non-UTF-8 all kept). A
// PATH arrives under its last component, like `scp -r` and `rsync` without
// a trailing slash. Symlinks are sent as links, never followed, unless
// `follow_symlinks` is set.
#pragma once

#include <string>
#include <vector>

#include "core/wire/messages.hpp"

namespace braid::files {

struct SourceTree {
  std::vector<wire::ManifestEntry> entries;
  std::vector<std::string> local_paths;  // one per entry
  uint64_t total_bytes = 0;
  size_t file_count = 0;
};

struct ScanResult {
  SourceTree tree;
  std::string error;  // empty on success; else a sentence naming the path
  bool ok() const { return error.empty(); }
};

ScanResult scan_sources(const std::vector<std::string>& paths, bool follow_symlinks = false);

}  // namespace braid::files
