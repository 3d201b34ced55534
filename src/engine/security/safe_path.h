// Safe receive paths: the receiver never writes outside the directory it was
// given, whatever path the peer sends.
//
// Two layers:
//   1. RelativePath::parse validates the peer's bytes: relative, no "." or
//      ".." or empty components, no NUL, each component at most NAME_MAX
//      bytes, the whole at most PATH_MAX-1. Anything else Linux allows is a
//      valid name and is kept byte for byte: spaces, newlines, non-UTF-8,
//      unicode, backslashes.
//   2. The *_beneath functions open and create strictly beneath a directory
//      fd and never follow a symlink in any component (openat2 with
//      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS where the kernel has it, else
//      one openat(O_NOFOLLOW) per component). So even a symlink planted in
//      the destination tree by someone else cannot redirect a write.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "result.h"
#include "unique_fd.h"

namespace braid::security {

constexpr std::size_t kMaxNameLength = 255;   // NAME_MAX on Linux
constexpr std::size_t kMaxPathLength = 4095;  // PATH_MAX - 1

class RelativePath {
 public:
  // Errc::path_invalid with a message naming what is wrong.
  static Result<RelativePath> parse(std::string_view peer_bytes);

  const std::vector<std::string>& components() const { return components_; }
  const std::string& str() const { return joined_; }  // components joined by '/'

 private:
  std::vector<std::string> components_;
  std::string joined_;
};

// A peer-supplied path made safe to print: control bytes, DEL and '\' shown
// as \xNN (names may hold newlines or terminal escapes).
std::string printable_path(std::string_view bytes);

// How to resolve beneath a directory; tests force each strategy.
enum class Resolver { automatic, openat2_only, per_component };

// Creates (like mkdir -p, each new directory with `mode`) and opens the
// directory `path` beneath `root_fd`. Existing directories are reused; a
// symlink or non-directory in the way is an error.
Result<UniqueFd> make_dirs_beneath(int root_fd, const RelativePath& path, mode_t mode = 0755);

// The parent directory of `path` (opened, optionally created) and its last
// component, for renameat/linkat/unlinkat by the caller.
struct ParentDir {
  UniqueFd dir;
  std::string leaf;
};
Result<ParentDir> open_parent_beneath(int root_fd, const RelativePath& path, bool create_dirs, mode_t dir_mode = 0755);

// open(2) of `path` beneath `root_fd` with `flags` (O_NOFOLLOW and O_CLOEXEC
// are always added; O_CREAT uses `mode`). Parent directories must exist.
Result<UniqueFd> open_beneath(int root_fd, const RelativePath& path, int flags, mode_t mode = 0644,
                              Resolver resolver = Resolver::automatic);

}  // namespace braid::security
