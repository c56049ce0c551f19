#include "impl/statistics/kolmogorov.h"

#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

namespace specgate {
namespace {

// Below this lambda P(K <= lambda) < 1e-50: the survival is 1 in double precision.
constexpr double kSurvivalIsOne = 0.1;
// Where the alternating series takes over from the theta-function form: both converge within
// five terms from here on, and the survival is at most 0.27, so it is computed directly rather
// than as 1 minus a cumulative probability.
constexpr double kSeriesFrom = 1.0;
constexpr int kMaxTerms = 100;

// P(K <= lambda) = sqrt(2 pi) / lambda sum_{k>=1} exp(-(2k-1)^2 pi^2 / (8 lambda^2)), the
// Jacobi theta-function form of the same law, fast where the alternating series is slow.
double kolmogorov_cdf_theta(double lambda) {
  const double scale = std::numbers::pi * std::numbers::pi / (8.0 * lambda * lambda);
  double sum = 0.0;
  for (int k = 1; k <= kMaxTerms; ++k) {
    const double odd = 2.0 * k - 1.0;
    const double term = std::exp(-odd * odd * scale);
    sum += term;
    if (term <= std::numeric_limits<double>::epsilon() * sum) break;
  }
  return std::sqrt(2.0 * std::numbers::pi) / lambda * sum;
}

double kolmogorov_survival_series(double lambda) {
  double sum = 0.0;
  double sign = 1.0;
  for (int k = 1; k <= kMaxTerms; ++k) {
    const double term = std::exp(-2.0 * k * k * lambda * lambda);
    sum += sign * term;
    if (term <= std::numeric_limits<double>::epsilon() * sum) break;
    sign = -sign;
  }
  return 2.0 * sum;
}

}  // namespace

double kolmogorov_survival(double lambda) {
  if (lambda <= kSurvivalIsOne) return 1.0;
  if (lambda < kSeriesFrom) return 1.0 - kolmogorov_cdf_theta(lambda);
  return kolmogorov_survival_series(lambda);
}

double kolmogorov_upper_quantile(double alpha) {
  if (!(alpha > 0.0 && alpha < 1.0)) {
    throw std::invalid_argument("a Kolmogorov quantile needs alpha in (0, 1), got " + std::to_string(alpha));
  }
  // The survival decreases strictly past kSurvivalIsOne, and 2 exp(-2 lambda^2) < 1e-320 at 20.
  double low = kSurvivalIsOne;
  double high = 20.0;
  while (high - low > 4.0 * std::numeric_limits<double>::epsilon() * high) {
    const double middle = 0.5 * (low + high);
    (kolmogorov_survival(middle) > alpha ? low : high) = middle;
  }
  return high;
}

}  // namespace specgate
