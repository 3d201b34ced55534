// The known-peers file: the keys this host trusts, like SSH's known_hosts,
// each under a label the user can change. Lives next to the identity:
// <config dir>/known_peers (mode 0600). One line per peer; '#' starts a
// comment:
//
//   LABEL FINGERPRINT [paired=2026-12-02T04:31:07Z] [host=NAME]
//
// The KEY is the identity; the label is the user's name for it:
//   - a peer whose key is in the file is trusted whatever name it claims;
//   - any other peer is unknown and must pair with a code — also when it
//     claims a name that is already a label: two machines called `vm` are
//     two peers, pinned as `vm` and `vm-2` (a pairing labels the new key
//     with the name it claims, or `--name LABEL`, made unique with -2, -3…);
//   - labels are unique in the file, so a label names one key. When the
//     user addresses a peer by a label (`braid send FILE vm`) and the peer
//     presents another key, that is refused loudly (check_label).
// paired= (UTC) and host= (the name the peer claimed when it paired) are
// written by braid and optional: a line of an older braid, "NAME
// FINGERPRINT", is valid as it is (its name is its label).
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
    std::string label;        // the user's name for this peer; unique in the file
    Fingerprint fingerprint;  // its key: the identity
    std::string paired;       // when it paired, "2026-12-02T04:31:07Z"; empty in older lines
    std::string host;         // the name it claimed when it paired; empty in older lines
    int line = 0;             // 1-based line in the file, for messages that say what to edit
  };

  enum class Verdict { pinned, unknown, changed };
  struct Check {
    Verdict verdict = Verdict::unknown;
    std::optional<Entry> entry;  // pinned: the matching entry; changed: the label's entry
  };

  // Reads `file`; a missing file is an empty list. A malformed line, or a
  // label used twice, is an error naming the file and line (never silently
  // skipped: it may be a pin).
  static Result<KnownPeers> load(const std::filesystem::path& file);
  // load(identity_dir / kFileName).
  static Result<KnownPeers> load_in(const std::filesystem::path& dir) { return load(dir / kFileName); }

  // By key: pinned (whatever name the peer claims now) or unknown.
  Check check(const Fingerprint& fp) const;
  // The user addressed the peer by `label`: pinned if the label pins `fp`,
  // changed if it pins another key (refuse loudly: key_changed_message),
  // unknown if no entry has that label.
  Check check_label(std::string_view label, const Fingerprint& fp) const;

  const Entry* find_key(const Fingerprint& fp) const;
  const Entry* find_label(std::string_view label) const;
  // The entry `which` names: a label, else a fingerprint prefix of at least
  // 4 characters ("SHA256:" optional) that exactly one entry has.
  // Errc::no_such_peer (none, or several) otherwise.
  Result<Entry> find(std::string_view which) const;

  // Pins `fp` after a pairing, under `wanted` if given, else under `host`
  // (the name the peer claims), made unique with "-2", "-3", ... when
  // another key has it (a pairing that succeeded never fails for a label:
  // the command line refuses a --name already in use before it starts).
  // A key already pinned keeps its entry (returned).
  // Holds an exclusive lock on the file while it re-reads and appends, so
  // concurrent braid processes do not lose each other's entries.
  // `paired_at` is stored as paired= (the caller's clock: this class reads none).
  Result<Entry> pin(const Fingerprint& fp, std::string_view host, std::string_view wanted, std::string_view paired_at);
  // Gives the entry `which` names (find()) the label `to`: Errc::label_taken
  // if another entry has it. Rewrites the file atomically under the lock.
  Result<Entry> relabel(std::string_view which, std::string_view to);
  // Removes the entry `which` names (find()): that peer must pair again.
  Result<Entry> forget(std::string_view which);

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

// "SHA256:AbCdEfGh…": enough of a fingerprint to tell peers apart in lists.
std::string short_fingerprint(const Fingerprint& fp);

}  // namespace braid::security
