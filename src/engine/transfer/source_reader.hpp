// The running transfer's files as one byte space (files::FileLayout), read
// by every lane's writer with pread through a shared cache of open fds.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/files/fd_cache.hpp"
#include "engine/files/file_layout.hpp"
#include "engine/files/source_tree.hpp"
#include "engine/transfer/data_lane.hpp"

namespace braid::transfer {

class SourceReader final : public PieceSource {
 public:
  SourceReader(uint32_t id, const files::SourceTree& tree, wire::HashAlgo hash,
               compress::Mode compress = compress::Mode::off)
      : id_(id),
        compress_(compress),
        tree_(tree),
        hash_(hash),
        layout_(tree.entries),
        fds_(512, [&tree](size_t entry, std::string& error) {
          int fd = ::open(tree.local_paths[entry].c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
          if (fd < 0) error = "cannot open '" + tree.local_paths[entry] + "': " + std::strerror(errno);
          return security::UniqueFd(fd);
        }) {}
  uint32_t transfer_id() const override { return id_; }
  wire::HashAlgo hash() const override { return hash_; }
  compress::Mode compress() const override { return compress_; }
  bool read(uint64_t off, uint64_t n, uint8_t* dst, std::string& error) override {
    return layout_.for_each(off, n, [&](const files::Extent& x) {
      auto fd = fds_.get(x.entry, error);
      if (!fd) return false;
      uint8_t* p = dst + (x.transfer_offset - off);
      uint64_t left = x.length, at = x.file_offset;
      while (left > 0) {
        ssize_t got = ::pread(fd->get(), p, left, static_cast<off_t>(at));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          error = got == 0 ? "'" + tree_.local_paths[x.entry] + "' shrank while it was being sent"
                           : std::string("read failed: ") + std::strerror(errno);
          return false;
        }
        p += got;
        at += static_cast<uint64_t>(got);
        left -= static_cast<uint64_t>(got);
      }
      // After a file's last bytes are read: if it changed since the scan
      // (grew, shrank, was written to), what was sent is not the file —
      // say so rather than deliver a silently cut or mixed copy.
      if (x.file_offset + x.length == tree_.entries[x.entry].size)
        if (auto why = files::check_unchanged(tree_, x.entry, fd->get())) {
          error = *why;
          return false;
        }
      return true;
    });
  }

 private:
  uint32_t id_;
  compress::Mode compress_;
  const files::SourceTree& tree_;  // outlives the transfer (the caller's)
  wire::HashAlgo hash_;
  files::FileLayout layout_;
  files::FdCache fds_;
};


}  // namespace braid::transfer
