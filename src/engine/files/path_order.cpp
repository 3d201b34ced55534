#include "engine/files/path_order.hpp"

#include "engine/security/safe_path.h"

namespace braid::files {

std::string PathOrder::follow(std::string_view path, wire::EntryKind kind) {
  std::vector<std::string_view> parts;
  for (size_t from = 0;;) {
    const size_t slash = path.find('/', from);
    parts.push_back(path.substr(from, slash == std::string_view::npos ? std::string_view::npos : slash - from));
    if (slash == std::string_view::npos) break;
    from = slash + 1;
  }
  // Where the path leaves the last one: the first component that differs.
  size_t same = 0;
  while (same < parts.size() && same < last_.size() && parts[same] == last_[same].name) ++same;
  const std::string shown = "'" + security::printable_path(std::string(path)) + "'";
  if (same == parts.size()) {
    if (same == last_.size()) return "the offer names " + shown + " twice";
    return "the offer's entries are not in path order: " + shown + " comes after an entry beneath it";
  }
  if (same < last_.size() && parts[same] < last_[same].name)
    return "the offer's entries are not in path order: " + shown + " comes after '" +
           security::printable_path(last_[same].name) + "' in the same directory";
  // Its ancestors that are entries are among the last path's (see the top).
  for (size_t k = 0; k < same; ++k)
    if (last_[k].entry && *last_[k].entry != wire::EntryKind::directory) {
      std::string above;
      for (size_t j = 0; j <= k; ++j) above += (j ? "/" : "") + last_[j].name;
      return "the offer puts " + shown + " beneath '" + security::printable_path(above) +
             "', which it does not send as a directory";
    }
  last_.resize(parts.size());
  for (size_t k = same; k < parts.size(); ++k) {
    last_[k].name.assign(parts[k]);
    last_[k].entry.reset();
  }
  last_.back().entry = kind;
  return {};
}

}  // namespace braid::files
