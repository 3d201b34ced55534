#include "engine/files/receive_tree.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <variant>

#include "core/units_parse.hpp"

namespace braid::files {
namespace {

using security::RelativePath;

std::string parent_of(const RelativePath& p) {
  const auto& c = p.components();
  std::string out;
  for (size_t i = 0; i + 1 < c.size(); ++i) {
    if (!out.empty()) out += '/';
    out += c[i];
  }
  return out;
}

std::string errno_text(int e) { return std::strerror(e); }

bool is_no_space(int e) { return e == ENOSPC || e == EDQUOT; }

wire::RefuseReason reason_for_errno(int e) {
  if (is_no_space(e)) return wire::RefuseReason::no_space;
  return wire::RefuseReason::not_writable;
}

}  // namespace

ReceiveTree::ReceiveTree(int root_fd, const wire::Offer& offer, std::string tag)
    : root_fd_(root_fd),
      entries_(offer.entries),
      tag_(std::move(tag)),
      layout_(offer.entries),
      fds_(256, [this](size_t entry, std::string& error) {
        auto rel = RelativePath::parse(temp_path(entry));
        if (!rel) {
          error = rel.error().message;
          return security::UniqueFd();
        }
        auto fd = security::open_beneath(root_fd_, rel.value(), O_RDWR);
        if (!fd) {
          error = fd.error().message;
          return security::UniqueFd();
        }
        return std::move(fd.value());
      }) {}

std::string ReceiveTree::temp_path(size_t entry) const {
  std::string parent = parent_of(paths_[entry]);
  std::string leaf = ".braid-" + tag_ + "-" + std::to_string(entry) + ".part";
  return parent.empty() ? leaf : parent + "/" + leaf;
}

std::variant<std::unique_ptr<ReceiveTree>, PrepareError> ReceiveTree::prepare(int root_fd, const wire::Offer& offer,
                                                                             const PrepareOptions& opts) {
  if (opts.tag.empty() || opts.tag.find_first_not_of("0123456789abcdef") != std::string::npos)
    return PrepareError{wire::RefuseReason::bad_offer, "internal error: a temporary-file tag must be hex digits"};
  std::unique_ptr<ReceiveTree> t(new ReceiveTree(root_fd, offer, opts.tag));
  // 1. Every path must be a clean relative path, unique, and every parent
  //    that the offer itself names must be a directory of the offer.
  std::set<std::string> seen;
  std::set<std::string> dirs;
  for (const auto& e : offer.entries) {
    auto p = RelativePath::parse(e.path);
    if (!p)
      return PrepareError{wire::RefuseReason::bad_path,
                          "refused a path from the sender: '" + security::printable_path(e.path) + "': " + p.error().message};
    if (!seen.insert(p.value().str()).second)
      return PrepareError{wire::RefuseReason::bad_offer,
                          "the offer names '" + security::printable_path(e.path) + "' twice"};
    if (e.kind == wire::EntryKind::directory) dirs.insert(p.value().str());
    t->paths_.push_back(std::move(p.value()));
  }
  for (const auto& p : t->paths_) {
    std::string prefix;
    const auto& c = p.components();
    for (size_t i = 0; i + 1 < c.size(); ++i) {
      prefix += (i ? "/" : "") + c[i];
      if (seen.count(prefix) && !dirs.count(prefix))
        return PrepareError{wire::RefuseReason::bad_offer, "the offer puts '" + security::printable_path(p.str()) +
                                                               "' beneath '" + security::printable_path(prefix) +
                                                               "', which it does not send as a directory"};
    }
  }
  // 2. Which links are created (--links).
  t->link_skipped_.assign(offer.entries.size(), false);
  std::set<std::string> links;
  for (size_t i = 0; i < offer.entries.size(); ++i)
    if (offer.entries[i].kind == wire::EntryKind::symlink) links.insert(t->paths_[i].str());
  for (size_t i = 0; i < offer.entries.size(); ++i) {
    const auto& e = offer.entries[i];
    if (e.kind != wire::EntryKind::symlink || opts.links == LinkPolicy::keep) continue;
    std::string why = opts.links == LinkPolicy::skip ? "links are not created (--links skip)"
                                                     : unsafe_link_reason(t->paths_[i], e.link_target, links);
    if (why.empty()) continue;
    t->link_skipped_[i] = true;
    t->skipped_links_.push_back(SkippedLink{i, e.path, e.link_target, std::move(why)});
  }
  // 3. Room for the data.
  struct statvfs vfs {};
  if (::fstatvfs(root_fd, &vfs) == 0) {
    const unsigned long long avail = static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
    // Holes of sparse files take no room: only data is written.
    const uint64_t data = offer.data_bytes();
    const uint64_t needed = data - std::min(opts.bytes_present, data);
    if (avail < needed)
      return PrepareError{wire::RefuseReason::no_space,
                          "not enough space in the target directory: " + format_size(Bytes(data)) +
                              (data < offer.total_bytes() ? " of data" : "") + " offered" +
                              (opts.bytes_present ? " (" + format_size(Bytes(opts.bytes_present)) + " already here)" : "") +
                              ", " + format_size(Bytes(avail)) + " available"};
  }
  t->keep_ = opts.keep;
  t->keep_.resize(offer.entries.size(), false);
  t->refresh_ = opts.refresh;
  t->refresh_.resize(offer.entries.size(), false);
  t->keep_existing_.assign(offer.entries.size(), false);
  if (auto err = t->create_all(opts.keep_parts)) return *err;
  return t;
}

std::optional<PrepareError> ReceiveTree::create_all(bool keep_parts) {
  kept_.assign(entries_.size(), false);
  found_.assign(entries_.size(), -1);
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    if (e.kind == wire::EntryKind::directory) {
      auto d = security::make_dirs_beneath(root_fd_, paths_[i], 0700);
      if (!d) {
        const auto code = d.error().code;
        const bool path_problem = code == security::Errc::path_symlink || code == security::Errc::path_escapes ||
                                  code == security::Errc::path_not_directory || code == security::Errc::path_invalid;
        return PrepareError{path_problem ? wire::RefuseReason::bad_path : wire::RefuseReason::not_writable,
                            d.error().message};
      }
      continue;
    }
    if (e.kind != wire::EntryKind::file || keep_[i]) continue;
    auto rel = RelativePath::parse(temp_path(i));
    if (!rel) return PrepareError{wire::RefuseReason::bad_path, rel.error().message};
    auto parent = security::open_parent_beneath(root_fd_, paths_[i], /*create_dirs=*/true, 0755);
    if (!parent) {
      const auto code = parent.error().code;
      const bool path_problem = code == security::Errc::path_symlink || code == security::Errc::path_escapes ||
                                code == security::Errc::path_not_directory || code == security::Errc::path_invalid;
      return PrepareError{path_problem ? wire::RefuseReason::bad_path : wire::RefuseReason::not_writable,
                          parent.error().message};
    }
    // The final name must not be a directory or a symlink we would replace blindly.
    struct stat st {};
    if (::fstatat(parent.value().dir.get(), parent.value().leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode))
      return PrepareError{wire::RefuseReason::bad_offer,
                          "'" + security::printable_path(paths_[i].str()) + "' exists as a directory in the target"};
    if (e.hard_link_to) continue;  // no bytes of its own: linked to its file in finalize
    // Without a resume, bytes an older run left in a file of this name are
    // worth nothing: start from an empty file (and give their blocks back).
    if (keep_parts) {  // what an earlier run left, before this one makes it the file's size
      struct stat before {};
      if (::fstatat(parent.value().dir.get(), (".braid-" + tag_ + "-" + std::to_string(i) + ".part").c_str(), &before,
                    AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(before.st_mode))
        found_[i] = static_cast<int64_t>(before.st_size);
    }
    auto fd = security::open_beneath(root_fd_, rel.value(), O_RDWR | O_CREAT | (keep_parts ? 0 : O_TRUNC), 0600);
    if (!fd) return PrepareError{wire::RefuseReason::not_writable, fd.error().message};
    struct stat part {};
    kept_[i] = keep_parts && ::fstat(fd.value().get(), &part) == 0 && S_ISREG(part.st_mode) &&
               static_cast<uint64_t>(part.st_size) == e.size;
    if (::ftruncate(fd.value().get(), static_cast<off_t>(e.size)) != 0) {
      const int err = errno;
      return PrepareError{reason_for_errno(err), "cannot size '" + security::printable_path(temp_path(i)) +
                                                     "': " + errno_text(err)};
    }
  }
  return std::nullopt;
}

int ReceiveTree::write(uint64_t offset, std::span<const uint8_t> data) {
  std::shared_lock seal(sealing_);
  if (sealed_) return 0;
  int result = 0;
  const bool ok = layout_.for_each(offset, data.size(), [&](const Extent& x) {
    std::string error;
    auto fd = fds_.get(x.entry, error);
    if (!fd) {
      result = EIO;
      return false;
    }
    const uint8_t* p = data.data() + (x.transfer_offset - offset);
    uint64_t left = x.length;
    off_t at = static_cast<off_t>(x.file_offset);
    while (left > 0) {
      ssize_t n = ::pwrite(fd->get(), p, left, at);
      if (n < 0) {
        if (errno == EINTR) continue;
        result = errno;
        return false;
      }
      if (n == 0) {
        result = ENOSPC;
        return false;
      }
      p += n;
      at += n;
      left -= static_cast<uint64_t>(n);
    }
    return true;
  });
  if (!ok && result == 0) result = EINVAL;  // range outside the transfer
  return result;
}

int ReceiveTree::read(uint64_t offset, std::span<uint8_t> out) {
  int result = 0;
  const bool ok = layout_.for_each(offset, out.size(), [&](const Extent& x) {
    std::string error;
    auto fd = fds_.get(x.entry, error);
    if (!fd) {
      result = EIO;
      return false;
    }
    uint8_t* p = out.data() + (x.transfer_offset - offset);
    uint64_t left = x.length;
    off_t at = static_cast<off_t>(x.file_offset);
    while (left > 0) {
      const ssize_t n = ::pread(fd->get(), p, left, at);
      if (n < 0) {
        if (errno == EINTR) continue;
        result = errno;
        return false;
      }
      if (n == 0) {  // shorter than the file it stands for: someone cut it meanwhile
        result = ENODATA;
        return false;
      }
      p += n;
      at += n;
      left -= static_cast<uint64_t>(n);
    }
    return true;
  });
  if (!ok && result == 0) result = EINVAL;
  return result;
}

int ReceiveTree::sync_file(size_t entry) {
  std::string error;
  auto fd = fds_.get(entry, error);
  if (!fd) return EIO;
  return ::fdatasync(fd->get()) == 0 ? 0 : errno;
}

std::string ReceiveTree::finalize(int& err) {
  {
    std::unique_lock seal(sealing_);
    sealed_ = true;  // waits for writes in progress; later ones are dropped
  }
  err = 0;
  auto fail = [&](const std::string& what, int e) {
    err = e;
    return what + ": " + errno_text(e);
  };
  std::set<std::string> parents_touched;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    if (e.kind == wire::EntryKind::file && keep_[i] && refresh_[i]) {
      // Unchanged here: its bytes stay, its attributes follow the source's.
      if (security::UniqueFd fd = open_existing(i); fd.valid()) {
        apply_metadata(fd.get(), {}, i);
        if (::fchmod(fd.get(), e.mode & 07777) != 0) return fail("chmod of '" + security::printable_path(e.path) + "'", errno);
      }
      continue;
    }
    if (e.kind != wire::EntryKind::file || keep_[i] || e.hard_link_to) continue;
    if (keep_existing_[i]) {
      if (auto failure = settle_existing(i, err); !failure.empty()) return failure;
      continue;
    }
    std::string error;
    auto fd = fds_.get(i, error);
    if (!fd) return fail("cannot reopen '" + security::printable_path(temp_path(i)) + "' (" + error + ")", EIO);
    if (::fsync(fd->get()) != 0) return fail("fsync of '" + security::printable_path(temp_path(i)) + "'", errno);
    // Owner first (a chown clears set-id bits and file capabilities), the
    // ACLs before the mode (setting one rewrites the group bits).
    apply_metadata(fd->get(), {}, i);
    if (::fchmod(fd->get(), e.mode & 07777) != 0) return fail("chmod of '" + security::printable_path(temp_path(i)) + "'", errno);
    const timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)}, {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
    if (::futimens(fd->get(), times) != 0) return fail("setting the mtime of '" + security::printable_path(temp_path(i)) + "'", errno);
    auto parent = security::open_parent_beneath(root_fd_, paths_[i], false);
    if (!parent) {
      err = EIO;
      return parent.error().message;
    }
    const std::string tmp_leaf = ".braid-" + tag_ + "-" + std::to_string(i) + ".part";
    if (::renameat(parent.value().dir.get(), tmp_leaf.c_str(), parent.value().dir.get(), parent.value().leaf.c_str()) != 0)
      return fail("cannot move '" + security::printable_path(paths_[i].str()) + "' into place", errno);
    parents_touched.insert(parent_of(paths_[i]));
  }
  fds_.clear();
  // Hard links (-H), once every file is in place: another name for the file
  // of an earlier entry, both beneath the target with no symlink on the way
  // (so nothing outside the transfer can be linked in). Made under a
  // temporary name and renamed over what stands there.
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    if (e.kind != wire::EntryKind::file || !e.hard_link_to) continue;
    const size_t first = *e.hard_link_to;
    auto from = security::open_parent_beneath(root_fd_, paths_[first], false);
    auto to = security::open_parent_beneath(root_fd_, paths_[i], true);
    if (!from || !to) {
      err = EIO;
      return !from ? from.error().message : to.error().message;
    }
    const int pfd = to.value().dir.get();
    const std::string tmp_leaf = ".braid-" + tag_ + "-" + std::to_string(i) + ".link";
    ::unlinkat(pfd, tmp_leaf.c_str(), 0);
    if (::linkat(from.value().dir.get(), from.value().leaf.c_str(), pfd, tmp_leaf.c_str(), 0) != 0)
      return fail("cannot link '" + security::printable_path(paths_[i].str()) + "' to '" +
                      security::printable_path(paths_[first].str()) + "'",
                  errno);
    if (::renameat(pfd, tmp_leaf.c_str(), pfd, to.value().leaf.c_str()) != 0)
      return fail("cannot move the link '" + security::printable_path(paths_[i].str()) + "' into place", errno);
    // Already a link to the same file there (a second run): rename did nothing.
    ::unlinkat(pfd, tmp_leaf.c_str(), 0);
    parents_touched.insert(parent_of(paths_[i]));
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    if (e.kind != wire::EntryKind::symlink || link_skipped_[i]) continue;
    auto parent = security::open_parent_beneath(root_fd_, paths_[i], true);
    if (!parent) {
      err = EIO;
      return parent.error().message;
    }
    const int pfd = parent.value().dir.get();
    const std::string tmp_leaf = ".braid-" + tag_ + "-" + std::to_string(i) + ".link";
    ::unlinkat(pfd, tmp_leaf.c_str(), 0);
    if (::symlinkat(e.link_target.c_str(), pfd, tmp_leaf.c_str()) != 0)
      return fail("cannot create the link '" + security::printable_path(paths_[i].str()) + "'", errno);
    const timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)}, {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
    apply_metadata(pfd, tmp_leaf, i);
    (void)::utimensat(pfd, tmp_leaf.c_str(), times, AT_SYMLINK_NOFOLLOW);
    if (::renameat(pfd, tmp_leaf.c_str(), pfd, parent.value().leaf.c_str()) != 0)
      return fail("cannot move the link '" + security::printable_path(paths_[i].str()) + "' into place", errno);
    parents_touched.insert(parent_of(paths_[i]));
  }
  // Directories last, deepest first: their mtimes change whenever an entry
  // inside them is created.
  for (size_t k = entries_.size(); k-- > 0;) {
    const auto& e = entries_[k];
    if (e.kind != wire::EntryKind::directory) continue;
    auto d = security::make_dirs_beneath(root_fd_, paths_[k], 0700);
    if (!d) {
      err = EIO;
      return d.error().message;
    }
    (void)::fsync(d.value().get());
    apply_metadata(d.value().get(), {}, k);
    if (::fchmod(d.value().get(), e.mode & 07777) != 0) return fail("chmod of '" + security::printable_path(paths_[k].str()) + "'", errno);
    const timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)}, {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
    (void)::futimens(d.value().get(), times);
    parents_touched.erase(paths_[k].str());
  }
  // Make the renames durable in the directories the offer did not name.
  for (const auto& p : parents_touched) {
    if (p.empty()) {
      (void)::fsync(root_fd_);
      continue;
    }
    if (auto rel = RelativePath::parse(p); rel)
      if (auto d = security::make_dirs_beneath(root_fd_, rel.value()); d) (void)::fsync(d.value().get());
  }
  return {};
}

security::UniqueFd ReceiveTree::open_existing(size_t entry) const {
  auto fd = security::open_beneath(root_fd_, paths_[entry], O_RDONLY);
  if (!fd) return security::UniqueFd();
  struct stat st {};
  if (::fstat(fd.value().get(), &st) != 0 || !S_ISREG(st.st_mode)) return security::UniqueFd();
  return std::move(fd.value());
}

int ReceiveTree::copy_from_existing(size_t entry, uint64_t file_offset, uint64_t length) {
  security::UniqueFd from = open_existing(entry);
  if (!from.valid()) return ENOENT;
  std::string error;
  auto to = fds_.get(entry, error);
  if (!to) return EIO;
  loff_t in = static_cast<loff_t>(file_offset), out = static_cast<loff_t>(file_offset);
  uint64_t left = length;
  while (left > 0) {
    const ssize_t n = ::copy_file_range(from.get(), &in, to->get(), &out, left, 0);
    if (n > 0) {
      left -= static_cast<uint64_t>(n);
      continue;
    }
    if (n == 0) return ENODATA;  // the existing file got shorter meanwhile
    if (errno == EINTR) continue;
    if (errno != EXDEV && errno != ENOSYS && errno != EOPNOTSUPP && errno != EINVAL) return errno;
    // No copy_file_range between these files: through a buffer.
    std::vector<uint8_t> buf(std::min<uint64_t>(left, 1 << 20));
    while (left > 0) {
      const ssize_t r = ::pread(from.get(), buf.data(), std::min<uint64_t>(left, buf.size()), in);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return r == 0 ? ENODATA : errno;
      for (ssize_t done = 0; done < r;) {
        const ssize_t w = ::pwrite(to->get(), buf.data() + done, static_cast<size_t>(r - done), out + done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w == 0 ? ENOSPC : errno;
        done += w;
      }
      in += r;
      out += r;
      left -= static_cast<uint64_t>(r);
    }
  }
  return 0;
}

void ReceiveTree::keep_existing(size_t entry) {
  if (entry < keep_existing_.size()) keep_existing_[entry] = true;
}

std::string ReceiveTree::settle_existing(size_t i, int& err) {
  const auto& e = entries_[i];
  security::UniqueFd fd = open_existing(i);
  if (!fd.valid()) {
    err = ENOENT;
    return "'" + security::printable_path(e.path) + "' went away on the receiver during the sync";
  }
  const timespec times[2] = {{e.mtime_sec, static_cast<long>(e.mtime_nsec)}, {e.mtime_sec, static_cast<long>(e.mtime_nsec)}};
  apply_metadata(fd.get(), {}, i);
  if (::fchmod(fd.get(), e.mode & 07777) != 0 || ::futimens(fd.get(), times) != 0) {
    err = errno;
    return "setting the mode and mtime of '" + security::printable_path(e.path) + "': " + errno_text(err);
  }
  auto parent = security::open_parent_beneath(root_fd_, paths_[i], false);
  if (parent) {
    const std::string tmp_leaf = ".braid-" + tag_ + "-" + std::to_string(i) + ".part";
    (void)::unlinkat(parent.value().dir.get(), tmp_leaf.c_str(), 0);
  }
  return {};
}

void ReceiveTree::apply_metadata(int fd, const std::string& leaf, size_t i) {
  const auto& e = entries_[i];
  auto warn = [&](std::string what) {
    if (metadata_failures_++ >= 100) return;
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "'" + std::string&&.
    std::string line(1, '\'');
    line += security::printable_path(e.path);
    line += "': ";
    line += what;
    metadata_warnings_.push_back(std::move(line));
  };
  if (e.owner || e.group)
    if (const int r = apply_owner(fd, leaf, e, ids_); r != 0)
      warn(std::string("cannot set its owner or group: ") + errno_text(r));
  if (e.xattrs && leaf.empty())
    if (std::string failed = apply_xattrs(fd, *e.xattrs); !failed.empty())
      warn("cannot set its extended attributes (" + failed + ")");
}

std::string check_writable_dir(int dir_fd, const std::string& shown_name) {
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0 || !S_ISDIR(st.st_mode)) return "'" + shown_name + "' is not a directory";
  const std::string probe = ".braid-probe-" + std::to_string(::getpid());
  int fd = ::openat(dir_fd, probe.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return "cannot create files in '" + shown_name + "': " + errno_text(errno);
  ::close(fd);
  ::unlinkat(dir_fd, probe.c_str(), 0);
  return {};
}

}  // namespace braid::files
