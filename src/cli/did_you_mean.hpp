// "Did you mean …?" for a mistyped command or flag: the closest of the
// known names by edit distance, if it is close enough to be a typo.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace braid::cli {

/// Optimal string alignment distance (insertions, deletions, substitutions
/// and swaps of two neighbours each cost 1).
size_t edit_distance(const std::string& a, const std::string& b);
/// The known name nearest `typed` within max(1, size/3) edits, if any.
std::optional<std::string> nearest_name(const std::string& typed, const std::vector<std::string>& known);

}  // namespace braid::cli
