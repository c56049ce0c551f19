#include "impl/statistics/poisson_binomial.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace specgate {

double poisson_binomial_upper_tail(std::span<const double> probabilities, int64_t at_least) {
  if (at_least < 0) throw std::invalid_argument("a count of successes is " + std::to_string(at_least) + ", below 0");
  double mean = 0.0;
  std::vector<double> possible;
  for (const double p : probabilities) {
    if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("a probability is " + std::to_string(p) + ", outside [0, 1]");
    mean += p;
    if (p > 0.0) possible.push_back(p);
  }
  if (at_least == 0) return 1.0;
  if (at_least > static_cast<int64_t>(possible.size())) return 0.0;
  const auto k = static_cast<size_t>(at_least);
  if (static_cast<double>(possible.size()) * static_cast<double>(k) > 5e7) {
    const double kd = static_cast<double>(at_least);
    return kd <= mean ? 1.0 : std::min(1.0, std::exp(-mean + kd * (1.0 + std::log(mean / kd))));
  }
  // below[j]: P(j successes so far) for j < k; below[k]: P(k or more), which no trial leaves.
  std::vector<double> below(k + 1, 0.0);
  below[0] = 1.0;
  for (const double p : possible) {
    below[k] += below[k - 1] * p;
    for (size_t j = k - 1; j > 0; --j) below[j] = below[j] * (1.0 - p) + below[j - 1] * p;
    below[0] *= 1.0 - p;
  }
  return std::clamp(below[k], 0.0, 1.0);
}

}  // namespace specgate
