// What `braid serve --share` serves and receives, apart from HTTP: the
// manifest of shared files (each file cut into 1 MiB chunks, each chunk's
// SHA-256, computed once by streaming the file and cached by size and
// mtime), reading a chunk back, and uploads assembled chunk by chunk.
//
// An upload follows braid's rule: no unverified byte under the final name.
// Its chunk hashes are declared when it starts; each chunk is checked
// against its declared hash before it is written into a temporary file
// (`.braid-upload.ID.part` in the target directory), and the temporary file
// is renamed to its name only when every chunk is there and verified.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace braid::serve {

inline constexpr uint64_t kShareChunkBytes = 1 << 20;

using Sha256 = std::array<uint8_t, 32>;
Sha256 sha256_of(std::string_view bytes);
std::string hex_of(const Sha256& h);
std::optional<Sha256> sha256_from_hex(std::string_view hex);

/// Number of chunks of a file of `size` bytes (0 for an empty file).
uint64_t chunk_count(uint64_t size, uint64_t chunk = kShareChunkBytes);

struct SharedFile {
  std::filesystem::path path;     // on disk
  std::string name;               // as shown and saved: relative, '/'-separated
  uint64_t size = 0;
  int64_t mtime_ns = 0;           // size and mtime as hashed: a file changed since is not served
  std::vector<Sha256> chunks;     // SHA-256 of each chunk
};

/// The files under the paths given to --share (directories walked, regular
/// files only; a name is its path below the directory given, whose own name
/// leads it). Hashes are computed on the first call and again only for a
/// file whose size or mtime changed; memory use is one chunk at a time.
class ShareManifest {
 public:
  explicit ShareManifest(std::vector<std::filesystem::path> roots) : roots_(std::move(roots)) {}
  /// Rescans the roots (hashing what is new or changed). Empty, or why not.
  std::string refresh();
  /// A snapshot of the files, ids being their index.
  std::vector<SharedFile> files() const;
  /// {"chunk_size", "files": [{"id", "name", "size", "chunks": [hex…]}]}
  nlohmann::json json() const;
  /// Chunk `n` of file `id`, read from disk; nullopt (and `why`) when there is no such chunk or the file
  /// changed since it was hashed.
  std::optional<std::string> chunk(size_t id, uint64_t n, std::string& why) const;
  /// How many chunks were hashed so far (the cache's effect, for tests).
  uint64_t chunks_hashed() const;

 private:
  std::vector<std::filesystem::path> roots_;
  mutable std::mutex mu_;
  std::vector<SharedFile> files_;
  uint64_t hashed_ = 0;
};

/// Hashes a file chunk by chunk (one chunk in memory at a time).
std::optional<std::vector<Sha256>> hash_file_chunks(const std::filesystem::path& path, uint64_t size);

/// Uploads into one directory, each assembled chunk by chunk.
class ShareUploads {
 public:
  struct Limits {
    uint64_t max_bytes = 0;     // largest file accepted; 0: no bound
    uint64_t disk_reserve = 0;  // an upload that would leave less free than this is refused
  };
  ShareUploads(std::filesystem::path dir, Limits limits) : dir_(std::move(dir)), limits_(limits) {}
  ~ShareUploads();

  struct Started {
    uint64_t id = 0;
    std::string error;  // non-empty: refused, and why
  };
  /// Starts an upload of `name` (relative, no "..", no leading '/'), `size`
  /// bytes, whose chunks (kShareChunkBytes each, the last shorter) have the
  /// given SHA-256 hashes. `free_bytes`: free space in the directory now.
  Started start(const std::string& name, uint64_t size, const std::vector<Sha256>& chunks,
                std::optional<uint64_t> free_bytes);

  enum class ChunkResult { stored, complete, bad_hash, bad_length, unknown, failed };
  /// Checks chunk `n` against its declared hash and writes it; `complete`
  /// once every chunk is in and the file has its name.
  ChunkResult put(uint64_t id, uint64_t n, std::string_view bytes, std::string& why);
  /// Uploads not yet complete.
  size_t pending() const;

  /// True if `name` is a safe relative path: no empty, "." or ".." component, no leading '/', no NUL.
  static bool safe_name(const std::string& name);

 private:
  struct Upload {
    std::filesystem::path final_path, temp_path;
    uint64_t size = 0;
    std::vector<Sha256> chunks;
    std::vector<bool> have;
    uint64_t missing = 0;
    int fd = -1;
  };
  std::filesystem::path dir_;
  Limits limits_;
  mutable std::mutex mu_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Upload> uploads_;
};

}  // namespace braid::serve
