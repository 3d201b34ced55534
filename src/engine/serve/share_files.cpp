#include "engine/serve/share_files.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace braid::serve {
namespace fs = std::filesystem;

Sha256 sha256_of(std::string_view bytes) {
  Sha256 out{};
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), out.data(), &n, EVP_sha256(), nullptr);
  return out;
}

std::string hex_of(const Sha256& h) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : h) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

std::optional<Sha256> sha256_from_hex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Sha256 h{};
  for (size_t i = 0; i < 32; ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    h[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return h;
}

uint64_t chunk_count(uint64_t size, uint64_t chunk) { return (size + chunk - 1) / chunk; }

namespace {

uint64_t chunk_length(uint64_t size, uint64_t n) {
  const uint64_t at = n * kShareChunkBytes;
  return at >= size ? 0 : std::min(kShareChunkBytes, size - at);
}

bool read_at(int fd, char* buf, uint64_t len, uint64_t at) {
  while (len > 0) {
    const ssize_t got = ::pread(fd, buf, len, static_cast<off_t>(at));
    if (got <= 0) return false;
    buf += got;
    len -= static_cast<uint64_t>(got);
    at += static_cast<uint64_t>(got);
  }
  return true;
}

bool write_at(int fd, const char* buf, uint64_t len, uint64_t at) {
  while (len > 0) {
    const ssize_t put = ::pwrite(fd, buf, len, static_cast<off_t>(at));
    if (put <= 0) return false;
    buf += put;
    len -= static_cast<uint64_t>(put);
    at += static_cast<uint64_t>(put);
  }
  return true;
}

int64_t mtime_ns_of(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

}  // namespace

std::optional<std::vector<Sha256>> hash_file_chunks(const fs::path& path, uint64_t size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::vector<Sha256> out;
  std::string buf(kShareChunkBytes, '\0');
  for (uint64_t n = 0, count = chunk_count(size); n < count; ++n) {
    const uint64_t len = chunk_length(size, n);
    if (!read_at(fd, buf.data(), len, n * kShareChunkBytes)) {
      ::close(fd);
      return std::nullopt;
    }
    out.push_back(sha256_of(std::string_view(buf.data(), len)));
  }
  ::close(fd);
  return out;
}

std::string ShareManifest::refresh() {
  std::vector<SharedFile> found;
  std::error_code ec;
  for (const auto& root : roots_) {
    const fs::path abs = fs::absolute(root, ec);
    const fs::path base = abs.has_filename() ? abs : abs.parent_path();
    const fs::file_status st = fs::symlink_status(base, ec);
    if (ec) return "cannot share " + root.string() + ": " + ec.message();
    if (fs::is_regular_file(st)) {
      found.push_back({base, base.filename().string(), 0, 0, {}});
    } else if (fs::is_directory(st)) {
      for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec))
        if (it->is_regular_file(ec) && !it->is_symlink(ec))
          found.push_back({it->path(), (base.filename() / it->path().lexically_relative(base)).generic_string(), 0, 0, {}});
      if (ec) return "cannot walk " + root.string() + ": " + ec.message();
    } else {
      return "cannot share " + root.string() + ": not a file or directory";
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<SharedFile> previous = files();
  uint64_t hashed = 0;
  for (auto& f : found) {
    struct stat st{};
    if (::stat(f.path.c_str(), &st) != 0) return "cannot read " + f.path.string();
    f.size = static_cast<uint64_t>(st.st_size);
    f.mtime_ns = mtime_ns_of(st);
    const auto same = std::find_if(previous.begin(), previous.end(), [&](const SharedFile& p) {
      return p.path == f.path && p.size == f.size && p.mtime_ns == f.mtime_ns;
    });
    if (same != previous.end()) {
      f.chunks = same->chunks;
      continue;
    }
    auto chunks = hash_file_chunks(f.path, f.size);
    if (!chunks) return "cannot read " + f.path.string();
    f.chunks = std::move(*chunks);
    hashed += f.chunks.size();
  }
  std::lock_guard l(mu_);
  files_ = std::move(found);
  hashed_ += hashed;
  return {};
}

std::vector<SharedFile> ShareManifest::files() const {
  std::lock_guard l(mu_);
  return files_;
}

uint64_t ShareManifest::chunks_hashed() const {
  std::lock_guard l(mu_);
  return hashed_;
}

nlohmann::json ShareManifest::json() const {
  std::lock_guard l(mu_);
  nlohmann::json files = nlohmann::json::array();
  for (size_t id = 0; id < files_.size(); ++id) {
    nlohmann::json chunks = nlohmann::json::array();
    for (const auto& c : files_[id].chunks) chunks.push_back(hex_of(c));
    files.push_back({{"id", id}, {"name", files_[id].name}, {"size", files_[id].size}, {"chunks", chunks}});
  }
  return {{"chunk_size", kShareChunkBytes}, {"files", files}};
}

std::optional<std::string> ShareManifest::chunk(size_t id, uint64_t n, std::string& why) const {
  SharedFile f;
  {
    std::lock_guard l(mu_);
    if (id >= files_.size()) {
      why = "no such file";
      return std::nullopt;
    }
    f = files_[id];
  }
  if (n >= f.chunks.size()) {
    why = "no such chunk";
    return std::nullopt;
  }
  const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (fd < 0 || ::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != f.size || mtime_ns_of(st) != f.mtime_ns) {
    if (fd >= 0) ::close(fd);
    why = "the file changed since it was shared";
    return std::nullopt;
  }
  std::string out(chunk_length(f.size, n), '\0');
  const bool ok = read_at(fd, out.data(), out.size(), n * kShareChunkBytes);
  ::close(fd);
  if (!ok) {
    why = "cannot read the file";
    return std::nullopt;
  }
  return out;
}

ShareUploads::~ShareUploads() {
  for (auto& [id, u] : uploads_) {
    ::close(u.fd);
    std::error_code ec;
    fs::remove(u.temp_path, ec);  // unfinished uploads leave nothing behind
  }
}

bool ShareUploads::safe_name(const std::string& name) {
  if (name.empty() || name.front() == '/' || name.find('\0') != std::string::npos || name.size() > 4096) return false;
  for (size_t at = 0; at <= name.size();) {
    size_t end = name.find('/', at);
    if (end == std::string::npos) end = name.size();
    const std::string part = name.substr(at, end - at);
    if (part.empty() || part == "." || part == "..") return false;
    at = end + 1;
  }
  return true;
}

ShareUploads::Started ShareUploads::start(const std::string& name, uint64_t size, const std::vector<Sha256>& chunks,
                                          std::optional<uint64_t> free_bytes) {
  if (!safe_name(name)) return {0, "a file name must be a relative path without '..'"};
  if (chunks.size() != chunk_count(size)) return {0, "the chunk hashes do not match the size"};
  if (limits_.max_bytes && size > limits_.max_bytes)
    return {0, "the file is larger than this share accepts (" + std::to_string(limits_.max_bytes) + " bytes)"};
  if (limits_.disk_reserve && (!free_bytes || *free_bytes < size || *free_bytes - size < limits_.disk_reserve))
    return {0, "not enough free space on the server"};
  Upload u;
  u.final_path = dir_ / name;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(u.final_path, ec))) return {0, "a file of that name exists on the server"};
  fs::create_directories(u.final_path.parent_path(), ec);
  if (ec) return {0, "cannot create the directory: " + ec.message()};
  uint64_t id = 0;
  {
    std::lock_guard l(mu_);
    id = next_id_++;
  }
  u.temp_path = u.final_path.parent_path() / (".braid-upload." + std::to_string(id) + ".part");
  u.fd = ::open(u.temp_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (u.fd < 0) return {0, "cannot create the temporary file"};
  if (::ftruncate(u.fd, static_cast<off_t>(size)) != 0) {
    ::close(u.fd);
    fs::remove(u.temp_path, ec);
    return {0, "cannot size the temporary file"};
  }
  u.size = size;
  u.chunks = chunks;
  u.have.assign(chunks.size(), false);
  u.missing = chunks.size();
  {
    std::lock_guard l(mu_);
    uploads_.emplace(id, std::move(u));
  }
  if (chunks.empty()) {  // an empty file is complete at once
    std::string why;
    (void)put(id, 0, {}, why);
  }
  return {id, {}};
}

ShareUploads::ChunkResult ShareUploads::put(uint64_t id, uint64_t n, std::string_view bytes, std::string& why) {
  std::unique_lock l(mu_);
  auto it = uploads_.find(id);
  if (it == uploads_.end()) {
    why = "no such upload (finished, or never started)";
    return ChunkResult::unknown;
  }
  Upload& u = it->second;
  if (!u.chunks.empty()) {
    if (n >= u.chunks.size() || bytes.size() != chunk_length(u.size, n)) {
      why = "chunk " + std::to_string(n) + " has the wrong length";
      return ChunkResult::bad_length;
    }
    const Sha256 expected = u.chunks[n];
    l.unlock();  // hashing a MiB needs no lock
    if (sha256_of(bytes) != expected) {
      why = "chunk " + std::to_string(n) + " does not match its SHA-256";
      return ChunkResult::bad_hash;
    }
    l.lock();
    it = uploads_.find(id);
    if (it == uploads_.end()) return ChunkResult::complete;  // finished by a duplicate of this chunk meanwhile
    Upload& v = it->second;
    if (!v.have[n]) {
      if (!write_at(v.fd, bytes.data(), bytes.size(), n * kShareChunkBytes)) {
        why = "cannot write the temporary file";
        return ChunkResult::failed;
      }
      v.have[n] = true;
      --v.missing;
    }
  }
  Upload& v = it->second;
  if (v.missing > 0) return ChunkResult::stored;
  // Every chunk is in and verified: only now does the file get its name.
  // RENAME_NOREPLACE: a file that took the name meanwhile is not overwritten.
  const bool ok = ::fsync(v.fd) == 0 &&
                  ::renameat2(AT_FDCWD, v.temp_path.c_str(), AT_FDCWD, v.final_path.c_str(), RENAME_NOREPLACE) == 0;
  ::close(v.fd);
  if (!ok) {
    std::error_code ec;
    fs::remove(v.temp_path, ec);
    uploads_.erase(it);
    why = "cannot give the file its name";
    return ChunkResult::failed;
  }
  uploads_.erase(it);
  return ChunkResult::complete;
}

size_t ShareUploads::pending() const {
  std::lock_guard l(mu_);
  return uploads_.size();
}

}  // namespace braid::serve
