// The known-peers file: which key each peer name is pinned to, like SSH's
// known_hosts. One line per peer, "NAME FINGERPRINT"; '#' starts a comment.
// Lives next to the identity: <config dir>/known_peers (mode 0600).
//
// A peer is trusted when its key's fingerprint is in the file (whatever name
// it now uses: the key, not the name, is the identity). A peer whose name is
// in the file with another key is refused loudly. Any other peer is unknown
// and must pair with a code.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fingerprint.h"
#include "result.h"

namespace braid::security {

class KnownPeers {
 public:
  static constexpr std::string_view kFileName = "known_peers";

  struct Entry {
    std::string name;
    Fingerprint fingerprint;
    int line = 0;  // 1-based line in the file, for messages that say what to edit
  };

  enum class Verdict { pinned, unknown, changed };
  struct Check {
    Verdict verdict = Verdict::unknown;
    std::optional<Entry> entry;  // pinned: the matching entry; changed: the old one
  };

  // Reads `file`; a missing file is an empty list. A malformed line is an
  // error naming the file and line (never silently skipped: it may be a pin).
  static Result<KnownPeers> load(const std::filesystem::path& file);
  // load(identity_dir / kFileName).
  static Result<KnownPeers> load_in(const std::filesystem::path& dir) { return load(dir / kFileName); }

  Check check(std::string_view name, const Fingerprint& fp) const;

  // Pins `name` to `fp` in the file (and in memory). Holds an exclusive lock
  // on the file while it re-reads and appends, so concurrent braid processes
  // do not lose each other's entries. Adding an existing pin is a no-op;
  // adding a name pinned to another key is Errc::peer_key_changed.
  Status add(std::string_view name, const Fingerprint& fp);

  const std::vector<Entry>& entries() const { return entries_; }
  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
  std::vector<Entry> entries_;
};

// The loud message for a changed key: names the peer, the pinned and the
// offered fingerprints, and the file and line to edit.
std::string key_changed_message(const KnownPeers::Entry& pinned, const Fingerprint& offered,
                                const std::filesystem::path& file);

}  // namespace braid::security
