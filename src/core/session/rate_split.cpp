#include "core/session/rate_split.hpp"

#include <algorithm>
#include <numeric>

namespace braid::session {

namespace {
constexpr double kSmallRise = 1.02;
}  // namespace

std::vector<double> water_fill(double cap, const std::vector<double>& claims, const std::vector<bool>& grows) {
  const size_t n = claims.size();
  std::vector<double> out(n, 0);
  if (n == 0 || cap <= 0) return out;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto claim = [&](size_t i) { return claims[i] < 0 ? cap * 2 + 1 : claims[i]; };  // unbounded: above any share
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return claim(a) < claim(b); });
  double left = cap;
  size_t k = 0;
  for (; k < n; ++k) {
    const double fair = left / static_cast<double>(n - k);
    if (claim(order[k]) > fair) break;
    out[order[k]] = claim(order[k]);
    left -= out[order[k]];
  }
  if (k < n) {
    for (size_t j = k; j < n; ++j) out[order[j]] = left / static_cast<double>(n - k);
  } else {
    // Every claim met: the rest on top, so no cap binds a lane that may be
    // about to go faster — not on one its path holds back.
    size_t growing = 0;
    for (size_t i = 0; i < n; ++i) growing += i < grows.size() && grows[i];
    for (size_t i = 0; i < n; ++i)
      if (growing == 0 || (i < grows.size() && grows[i])) out[i] += left / static_cast<double>(growing ? growing : n);
  }
  return out;
}

bool cap_worth_setting(std::optional<double> current, std::optional<double> wanted) {
  if (current.has_value() != wanted.has_value()) return true;
  if (!wanted) return false;
  return *wanted < *current || *wanted > kSmallRise * *current;
}

std::vector<std::optional<double>> split_rates(std::optional<double> total, const std::vector<double>& group_caps,
                                               const std::vector<RateClaim>& lanes) {
  const size_t n = lanes.size();
  std::vector<std::optional<double>> out(n);
  // What each lane claims: its measured rate with headroom, or unbounded.
  std::vector<double> claims(n);
  std::vector<bool> grows(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& l = lanes[i];
    const bool held_by_path = l.measured && l.cap && *l.measured < kAtCap * *l.cap;
    claims[i] = !l.measured ? -1 : *l.measured * (held_by_path ? kPathLimitedHeadroom : kClaimHeadroom);
    grows[i] = !held_by_path;
  }
  // A metered interface first: its cap over its own lanes' claims.
  for (size_t g = 0; g < group_caps.size(); ++g) {
    std::vector<size_t> members;
    for (size_t i = 0; i < n; ++i)
      if (lanes[i].group == static_cast<int>(g)) members.push_back(i);
    std::vector<double> c;
    std::vector<bool> gr;
    for (size_t i : members) c.push_back(claims[i]), gr.push_back(grows[i]);
    const auto share = water_fill(group_caps[g], c, gr);
    for (size_t k = 0; k < members.size(); ++k) {
      out[members[k]] = share[k];
      claims[members[k]] = share[k];  // what it may claim of the whole
    }
  }
  if (!total) return out;
  // Stalled lanes share an eighth of the limit while any other lane lives.
  std::vector<size_t> healthy, stalled;
  for (size_t i = 0; i < n; ++i) (lanes[i].stalled ? stalled : healthy).push_back(i);
  const double for_stalled = !healthy.empty() && !stalled.empty() ? *total / 8 : healthy.empty() ? *total : 0;
  for (const auto* set : {&healthy, &stalled}) {
    const double cap = set == &healthy ? *total - for_stalled : for_stalled;
    std::vector<double> c;
    std::vector<bool> gr;
    for (size_t i : *set) c.push_back(claims[i]), gr.push_back(grows[i]);
    const auto share = water_fill(cap, c, gr);
    for (size_t k = 0; k < set->size(); ++k) {
      const size_t i = (*set)[k];
      out[i] = out[i] ? std::min(*out[i], share[k]) : share[k];
    }
  }
  return out;
}

}  // namespace braid::session
