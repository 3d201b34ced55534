// Small, careful file helpers for braid's config directory: private
// directories, reading files that must be private, and writing files so that
// a crash or a second braid process never leaves a half-written key.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "result.h"

namespace braid::security {

// $XDG_CONFIG_HOME/braid if XDG_CONFIG_HOME is set and absolute (the XDG spec
// says to ignore relative values), else $HOME/.config/braid.
Result<std::filesystem::path> default_config_dir();

// Creates `dir` (and missing parents) with mode 0700, or tightens an existing
// one to 0700. Refuses a directory owned by another user.
Status ensure_private_dir(const std::filesystem::path& dir);

// Reads a whole small file without following a symlink at the last component.
// nullopt if it does not exist. With `must_be_private`, refuses a file that
// group or others can read or that another user owns (like ssh does for keys).
Result<std::optional<std::string>> read_small_file(const std::filesystem::path& path, bool must_be_private);

// Writes `data` to `path` only if `path` does not exist yet, atomically
// (temp file + fsync + link). Returns false if another writer got there first;
// the existing file is then left untouched.
Result<bool> create_file_exclusive(const std::filesystem::path& path, std::string_view data, mode_t mode);

// Replaces `path` atomically with `data` (temp file + fsync + rename).
Status replace_file(const std::filesystem::path& path, std::string_view data, mode_t mode);

// "strerror(errno)" without the thread-safety trap of strerror.
std::string errno_text(int err);

}  // namespace braid::security
