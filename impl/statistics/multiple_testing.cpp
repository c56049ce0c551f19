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

  HolmDecision decision{std::vector<double>(count), std::vector<bool>(count)};
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

}  // namespace specgate
