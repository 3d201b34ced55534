#include "engine/files/entry_metadata.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

namespace braid::files {
namespace {

/// A name list as flistxattr returns it: NUL-terminated names end to end.
/// Empty on a file system without xattrs. nullopt with errno set on failure.
std::optional<std::vector<std::string>> list_names(int fd) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const ssize_t size = ::flistxattr(fd, nullptr, 0);
    if (size < 0) {
      if (errno == ENOTSUP) return std::vector<std::string>{};
      return std::nullopt;
    }
    std::string buf(static_cast<size_t>(size), '\0');
    const ssize_t got = size ? ::flistxattr(fd, buf.data(), buf.size()) : 0;
    if (got < 0 && errno == ERANGE) continue;  // grew meanwhile
    if (got < 0) return std::nullopt;
    std::vector<std::string> names;
    for (size_t at = 0; at < static_cast<size_t>(got);) {
      const size_t end = buf.find('\0', at);
      if (end == std::string::npos) break;
      if (end > at) names.push_back(buf.substr(at, end - at));
      at = end + 1;
    }
    return names;
  }
  errno = ERANGE;
  return std::nullopt;
}

bool wanted(char cls, bool xattrs, bool acls) { return (cls == 'x' && xattrs) || (cls == 'a' && acls); }

}  // namespace

std::string IdNames::user(uid_t id) {
  auto [it, fresh] = users_.emplace(id, std::string());
  if (fresh) {
    std::vector<char> buf(16384);
    struct passwd pw{}, *found = nullptr;
    if (::getpwuid_r(id, &pw, buf.data(), buf.size(), &found) == 0 && found) it->second = pw.pw_name;
  }
  return it->second;
}

std::string IdNames::group(gid_t id) {
  auto [it, fresh] = groups_.emplace(id, std::string());
  if (fresh) {
    std::vector<char> buf(16384);
    struct group gr{}, *found = nullptr;
    if (::getgrgid_r(id, &gr, buf.data(), buf.size(), &found) == 0 && found) it->second = gr.gr_name;
  }
  return it->second;
}

std::optional<wire::XattrList> read_xattrs(int fd, const MetadataOptions& opts, std::string& why) {
  wire::XattrList out{opts.xattrs, opts.acls, {}};
  auto names = list_names(fd);
  if (!names) {
    why = std::string("cannot list its extended attributes: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::sort(names->begin(), names->end());
  for (const auto& n : *names) {
    if (!wanted(wire::xattr_class(n), opts.xattrs, opts.acls) || n.size() > wire::kMaxXattrNameBytes) continue;
    std::string value;
    for (int attempt = 0;; ++attempt) {
      const ssize_t size = ::fgetxattr(fd, n.c_str(), nullptr, 0);
      if (size < 0 && errno == ENODATA) break;  // removed meanwhile
      if (size < 0) {
        why = "cannot read its extended attribute " + n + ": " + std::strerror(errno);
        return std::nullopt;
      }
      value.assign(static_cast<size_t>(size), '\0');
      const ssize_t got = size ? ::fgetxattr(fd, n.c_str(), value.data(), value.size()) : 0;
      if (got >= 0) {
        value.resize(static_cast<size_t>(got));
        out.items.push_back(wire::Xattr{n, std::move(value)});
        break;
      }
      if (errno != ERANGE || attempt == 3) {
        why = "cannot read its extended attribute " + n + ": " + std::strerror(errno);
        return std::nullopt;
      }
    }
  }
  if (out.items.size() > wire::kMaxXattrs) {
    why = "more than " + std::to_string(wire::kMaxXattrs) + " extended attributes";
    return std::nullopt;
  }
  return out;
}

uid_t IdMapper::uid(const wire::OwnerId& o) {
  if (o.name.empty()) return o.id;
  auto [it, fresh] = users_.emplace(o.name, o.id);
  if (fresh) {
    std::vector<char> buf(16384);
    struct passwd pw{}, *found = nullptr;
    if (::getpwnam_r(o.name.c_str(), &pw, buf.data(), buf.size(), &found) == 0 && found) it->second = pw.pw_uid;
  }
  return it->second;
}

gid_t IdMapper::gid(const wire::OwnerId& o) {
  if (o.name.empty()) return o.id;
  auto [it, fresh] = groups_.emplace(o.name, o.id);
  if (fresh) {
    std::vector<char> buf(16384);
    struct group gr{}, *found = nullptr;
    if (::getgrnam_r(o.name.c_str(), &gr, buf.data(), buf.size(), &found) == 0 && found) it->second = gr.gr_gid;
  }
  return it->second;
}

int apply_owner(int fd, const std::string& leaf, const wire::ManifestEntry& e, IdMapper& ids) {
  const bool root = ::geteuid() == 0;
  const uid_t uid = e.owner && root ? ids.uid(*e.owner) : static_cast<uid_t>(-1);
  const gid_t gid = e.group ? ids.gid(*e.group) : static_cast<gid_t>(-1);
  if (uid == static_cast<uid_t>(-1) && gid == static_cast<gid_t>(-1)) return 0;
  const int r = leaf.empty() ? ::fchownat(fd, "", uid, gid, AT_EMPTY_PATH)
                             : ::fchownat(fd, leaf.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW);
  if (r == 0) return 0;
  // Not root: a group this user is not in stays as it is, as with rsync -g.
  if (!root && errno == EPERM && uid == static_cast<uid_t>(-1)) return 0;
  return errno;
}

std::string apply_xattrs(int fd, const wire::XattrList& list) {
  std::set<std::string> keep;
  for (const auto& a : list.items) {
    if (::fsetxattr(fd, a.name.c_str(), a.value.data(), a.value.size(), 0) != 0)
      return a.name + ": " + std::strerror(errno);
    keep.insert(a.name);
  }
  auto names = list_names(fd);
  if (!names) return std::string("listing: ") + std::strerror(errno);
  for (const auto& n : *names) {
    if (!wanted(wire::xattr_class(n), list.with_xattrs, list.with_acls) || keep.count(n)) continue;
    if (::fremovexattr(fd, n.c_str()) != 0 && errno != ENODATA) return n + ": " + std::strerror(errno);
  }
  return {};
}

}  // namespace braid::files
