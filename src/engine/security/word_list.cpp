#include "word_list.h"

#include <algorithm>
#include <string>
#include <vector>

namespace braid::security {
namespace {

// Optimal string alignment distance (Damerau-Levenshtein without
// repeated edits of one substring): a swap of neighbours costs 1.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

}  // namespace

std::optional<std::size_t> find_code_word(std::string_view typed) {
  if (typed.empty()) return std::nullopt;
  auto it = std::lower_bound(kCodeWords.begin(), kCodeWords.end(), typed);
  if (it == kCodeWords.end()) return std::nullopt;
  const auto index = static_cast<std::size_t>(it - kCodeWords.begin());
  if (*it == typed) return index;
  if (typed.size() < kCodeWordPrefix || !it->starts_with(typed)) return std::nullopt;
  // Sorted: any other word with this prefix would be the next one.
  if (index + 1 < kCodeWords.size() && kCodeWords[index + 1].starts_with(typed)) return std::nullopt;
  return index;
}

std::vector<std::string_view> nearest_code_words(std::string_view typed) {
  constexpr std::size_t kMaxDistance = 2;
  constexpr std::size_t kMaxShown = 3;
  std::vector<std::string_view> best;
  std::size_t best_distance = kMaxDistance + 1;
  for (std::string_view w : kCodeWords) {
    if (w.size() > typed.size() + kMaxDistance || typed.size() > w.size() + kMaxDistance) continue;
    const std::size_t d = edit_distance(typed, w);
    if (d < best_distance) {
      best.assign(1, w);
      best_distance = d;
    } else if (d == best_distance) {
      best.push_back(w);
    }
  }
  if (best.size() > kMaxShown) best.clear();
  return best;
}

}  // namespace braid::security
