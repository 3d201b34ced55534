#include "engine/files/link_policy.hpp"

#include <vector>

namespace braid::files {

std::optional<LinkPolicy> parse_link_policy(std::string_view text) {
  if (text == "keep") return LinkPolicy::keep;
  if (text == "safe") return LinkPolicy::safe;
  if (text == "skip") return LinkPolicy::skip;
  return std::nullopt;
}

const char* link_policy_name(LinkPolicy p) {
  switch (p) {
    case LinkPolicy::keep: return "keep";
    case LinkPolicy::safe: return "safe";
    case LinkPolicy::skip: return "skip";
  }
  return "?";
}

std::string unsafe_link_reason(const security::RelativePath& path, std::string_view target,
                               const std::set<std::string>& links) {
  if (target.empty()) return "its target is empty";
  if (target.front() == '/') return "its target is absolute";
  // Where the link stands: its directory inside the tree.
  std::vector<std::string> at(path.components().begin(), path.components().end() - 1);
  std::vector<std::string> parts;
  for (size_t start = 0; start <= target.size();) {
    const size_t slash = std::min(target.find('/', start), target.size());
    parts.emplace_back(target.substr(start, slash - start));
    start = slash + 1;
  }
  auto joined = [&] {
    std::string s;
    for (const auto& c : at) s += (s.empty() ? "" : "/") + c;
    return s;
  };
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& c = parts[i];
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (at.empty()) return "its target leaves the received tree";
      at.pop_back();
      continue;
    }
    at.push_back(c);
    bool more = false;
    for (size_t k = i + 1; k < parts.size(); ++k) more = more || (!parts[k].empty() && parts[k] != ".");
    if (more && links.count(joined())) return "its target passes through the link '" + security::printable_path(joined()) + "'";
  }
  return {};
}

}  // namespace braid::files
