#include "impl/statistics/multiple_testing.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace specgate {

HolmDecision holm_bonferroni(std::span<const double> p_values, double alpha) {
  if (!(alpha > 0.0 && alpha < 1.0)) {
    throw std::invalid_argument("a test level needs alpha in (0, 1), got " + std::to_string(alpha));
  }
  for (size_t i = 0; i < p_values.size(); ++i) {
    if (!(p_values[i] >= 0.0 && p_values[i] <= 1.0)) {
      throw std::invalid_argument("p-value " + std::to_string(i) + " is " + std::to_string(p_values[i]) +
                                  ", outside [0, 1]");
    }
  }
  const size_t count = p_values.size();
  std::vector<size_t> ascending(count);
  std::iota(ascending.begin(), ascending.end(), size_t{0});
  std::ranges::stable_sort(ascending, {}, [&](size_t i) { return p_values[i]; });

  HolmDecision decision{std::vector<double>(count), std::vector<bool>(count), std::vector<bool>(count, true), count};
  double running_max = 0.0;
  for (size_t rank = 0; rank < count; ++rank) {
    const size_t i = ascending[rank];
    const double multiplier = static_cast<double>(count - rank);
    running_max = std::max(running_max, std::min(1.0, multiplier * p_values[i]));
    decision.adjusted_p_values[i] = running_max;
    decision.rejected[i] = running_max <= alpha;
  }
  return decision;
}

HolmDecision holm_after_screening(std::span<const double> p_values, std::span<const double> smallest_p_values,
                                  double alpha) {
  if (smallest_p_values.size() != p_values.size())
    throw std::invalid_argument("a smallest attainable p-value for each of the " + std::to_string(p_values.size()) +
                                " hypotheses, got " + std::to_string(smallest_p_values.size()));
  for (const double smallest : smallest_p_values) {
    if (!(smallest >= 0.0 && smallest <= 1.0))
      throw std::invalid_argument("a smallest attainable p-value is " + std::to_string(smallest) + ", outside [0, 1]");
  }
  const size_t count = p_values.size();
  const auto attaining = [&](size_t m) {
    return static_cast<size_t>(std::ranges::count_if(
        smallest_p_values, [&](double smallest) { return smallest <= alpha / static_cast<double>(m); }));
  };
  size_t family = 1;
  while (family < count && attaining(family) > family) ++family;
  std::vector<size_t> members;
  std::vector<double> tested_p;
  for (size_t i = 0; i < count; ++i) {
    if (smallest_p_values[i] > alpha / static_cast<double>(family)) continue;
    members.push_back(i);
    tested_p.push_back(p_values[i]);
  }
  const HolmDecision holm = holm_bonferroni(tested_p, alpha);
  HolmDecision decision{std::vector<double>(count, 1.0), std::vector<bool>(count, false), std::vector<bool>(count, false),
                        members.size()};
  for (size_t j = 0; j < members.size(); ++j) {
    decision.adjusted_p_values[members[j]] = holm.adjusted_p_values[j];
    decision.rejected[members[j]] = holm.rejected[j];
    decision.tested[members[j]] = true;
  }
  return decision;
}

}  // namespace specgate
