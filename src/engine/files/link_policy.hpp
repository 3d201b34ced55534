// What the receiver does with the symlinks an offer carries (`recv --links`):
//   keep  create every link as sent (braid itself never follows one: every
//         open beneath the target refuses symlinks, docs/security.md);
//   safe  (the default) create only links that stay inside the received
//         tree, as rsync's --safe-links: not one whose target is absolute,
//         nor one whose target, resolved lexically against the link's own
//         directory inside the tree, climbs out of it with "..", nor one
//         whose target passes through another link of the offer (a link is
//         not a directory: "up/.." through up -> .. would climb out);
//   skip  create no link at all.
// A link not created is reported (the receiver's --json `skipped`, stderr).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "engine/security/safe_path.h"

namespace braid::files {

enum class LinkPolicy { keep, safe, skip };

std::optional<LinkPolicy> parse_link_policy(std::string_view text);
const char* link_policy_name(LinkPolicy p);

/// Why a link at `path` (inside the received tree) pointing to `target`
/// could lead out of the tree; empty if it cannot. `links`: the paths of the
/// offer's symlinks (components joined by '/').
std::string unsafe_link_reason(const security::RelativePath& path, std::string_view target,
                               const std::set<std::string>& links);

}  // namespace braid::files
