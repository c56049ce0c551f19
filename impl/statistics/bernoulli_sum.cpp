#include "impl/statistics/bernoulli_sum.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <boost/math/distributions/normal.hpp>

namespace specgate {

BernoulliSumTest bernoulli_sum_test(std::span<const BernoulliTrial> trials, double alpha, double allowed_shift) {
  if (trials.empty()) throw std::invalid_argument("bernoulli_sum_test: no trials");
  if (!(alpha > 0.0 && alpha < 1.0)) throw std::invalid_argument("bernoulli_sum_test: alpha must be in (0, 1)");
  if (!std::isfinite(allowed_shift)) throw std::invalid_argument("bernoulli_sum_test: the allowed shift must be finite");
  BernoulliSumTest test;
  test.alpha = alpha;
  test.allowed_shift = allowed_shift;
  test.trials = static_cast<int64_t>(trials.size());
  for (const auto& [p, success] : trials) {
    if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("bernoulli_sum_test: probability outside [0, 1]");
    test.observed += success;
    test.expected += p;
    test.variance += p * (1.0 - p);
    test.ruled_out += success ? p == 0.0 : p == 1.0;
  }
  const boost::math::normal normal;
  const double sd = std::sqrt(test.variance), difference = static_cast<double>(test.observed) - test.expected;
  const double beyond = difference - std::clamp(difference, std::min(0.0, allowed_shift), std::max(0.0, allowed_shift));
  if (test.variance > 0.0) {
    test.z = difference / sd;
    test.p_value = 2.0 * boost::math::cdf(boost::math::complement(normal, std::abs(beyond) / sd));
  } else {
    test.p_value = beyond == 0.0 ? 1.0 : 0.0;
  }
  if (test.ruled_out > 0) test.p_value = 0.0;
  const double critical = boost::math::quantile(boost::math::complement(normal, alpha / 2.0));
  if (test.expected > 0.0) {
    test.ratio = test.observed / test.expected;
    test.ratio_low = std::max(0.0, (test.observed - critical * sd) / test.expected);
    test.ratio_high = (test.observed + critical * sd) / test.expected;
    test.detectable_ratio_change =
        ((critical + boost::math::quantile(normal, 0.9)) * sd + std::abs(allowed_shift)) / test.expected;
  } else {
    test.ratio = test.observed == 0 ? 1.0 : INFINITY;
    test.ratio_low = test.ratio_high = test.ratio;
  }
  test.rejected = test.p_value <= alpha;
  return test;
}

}  // namespace specgate
