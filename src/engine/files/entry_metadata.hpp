// Owner, group and extended attributes of one entry, read on the sender
// (-o, -g, -X, -A) and applied on the receiver. POSIX ACLs are the kernel's
// system.posix_acl_access / system.posix_acl_default xattrs, read and
// written as opaque bytes: no ACL library on either end.
//
// Ids travel with names (unless --numeric-ids); the receiver takes its own
// id for a name it knows and the sender's id otherwise, as rsync does. ACL
// entries naming users and groups keep their numeric ids.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/wire/messages.hpp"

namespace braid::files {

/// What the sender reads of each entry besides mode and mtime.
struct MetadataOptions {
  bool owner = false;        // -o
  bool group = false;        // -g
  bool numeric_ids = false;  // --numeric-ids: ids only, no names
  bool xattrs = false;       // -X: user.*, trusted.*, security.*
  bool acls = false;         // -A: system.posix_acl_*
  bool any() const { return owner || group || xattrs || acls; }
};

/// Names of the sender's users and groups, looked up once per id.
class IdNames {
 public:
  std::string user(uid_t id);
  std::string group(gid_t id);

 private:
  std::map<uid_t, std::string> users_;
  std::map<gid_t, std::string> groups_;
};

/// The xattrs of an open file or directory in the classes `opts` asks for,
/// sorted by name (the offer's form). nullopt and `why` if they cannot be
/// read or are more than the offer can carry; a file system without xattrs
/// has none.
std::optional<wire::XattrList> read_xattrs(int fd, const MetadataOptions& opts, std::string& why);

/// The receiver's ids for the sender's names, looked up once per name.
class IdMapper {
 public:
  uid_t uid(const wire::OwnerId& o);
  gid_t gid(const wire::OwnerId& o);

 private:
  std::map<std::string, uid_t> users_;
  std::map<std::string, gid_t> groups_;
};

/// Gives the entry its owner and group (those it carries). `fd` is the
/// object itself (leaf empty) or its directory (leaf: a symlink's name,
/// not followed). The owner only when running as root (as rsync: no one
/// else may give a file away); the group whenever the system allows it,
/// silently kept when not root and not allowed. 0 or errno.
int apply_owner(int fd, const std::string& leaf, const wire::ManifestEntry& e, IdMapper& ids);

/// Makes the object's xattrs of the list's classes exactly the list: sets
/// each, removes the others of those classes (an ACL inherited from a
/// parent's default ACL included). Other classes are left alone. Empty on
/// success, else the first that failed and why ("user.a: Operation not supported").
std::string apply_xattrs(int fd, const wire::XattrList& list);

}  // namespace braid::files
