// The check of an offer whose entries come in path order (wire::Offer::ordered,
// protocol 10), made with the last path alone instead of every path so far.
//
// In path order (each directory's entries right after it, by name: the
// order of the paths' components, each compared by bytes, a path before
// the paths beneath it) a name sent twice would be out of order, and so
// would an entry beneath an earlier one that is no directory unless that
// one is among the last path's ancestors: the entries between a path and
// the paths beneath it all lie beneath it too. So what a receiver must know
// of the earlier entries is the last path's components and which of them
// are entries of which kind — as deep as the tree, whatever its size.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/wire/messages.hpp"

namespace braid::files {

class PathOrder {
 public:
  /// Empty when an entry of `kind` at `path` (checked: relative, no empty,
  /// "." or ".." component) may come next; else why not, one line.
  std::string follow(std::string_view path, wire::EntryKind kind);

 private:
  struct Step {
    std::string name;
    std::optional<wire::EntryKind> entry;  // the path down to here is an entry of this kind
  };
  std::vector<Step> last_;  // the last path, component by component
};

}  // namespace braid::files
