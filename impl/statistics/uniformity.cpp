#include "impl/statistics/uniformity.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/chi_squared.hpp>

#include "impl/statistics/kolmogorov.h"

namespace specgate {
namespace {

void check_alpha(double alpha) {
  if (!(alpha > 0.0 && alpha < 1.0)) {
    throw std::invalid_argument("a test level needs alpha in (0, 1), got " + std::to_string(alpha));
  }
}

void check_unit_interval(std::span<const double> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (!(values[i] >= 0.0 && values[i] <= 1.0)) {
      throw std::invalid_argument("value " + std::to_string(i) + " is " + std::to_string(values[i]) +
                                  ", outside [0, 1]");
    }
  }
}

std::vector<double> sorted_sample(std::span<const double> values) {
  if (values.empty()) throw std::invalid_argument("a Kolmogorov-Smirnov test needs a non-empty sample");
  check_unit_interval(values);
  std::vector<double> sorted(values.begin(), values.end());
  std::ranges::sort(sorted);
  return sorted;
}

void check_effective_n(double effective_n) {
  if (!(effective_n > 0.0)) {
    throw std::invalid_argument("a sample size must be positive, got " + std::to_string(effective_n));
  }
}

double stephens_scale(double effective_n) {
  check_effective_n(effective_n);
  const double root = std::sqrt(effective_n);
  return root + 0.12 + 0.11 / root;
}

DistributionTest decide(int64_t n, int64_t m, double effective_n, double distance, double alpha) {
  DistributionTest test;
  test.n = n;
  test.m = m;
  test.effective_n = effective_n;
  test.distance = distance;
  test.p_value = m == 0 ? ks_p_value(distance, effective_n) : ks_two_sample_p_value(distance, n, m);
  const double deviation = std::sqrt(std::log(2.0 / alpha) / (2.0 * effective_n));
  test.distance_low = std::max(0.0, distance - deviation);
  test.distance_high = std::min(1.0, distance + deviation);
  test.detectable_distance = ks_detectable_distance(effective_n, alpha);
  test.alpha = alpha;
  test.rejected = test.p_value <= alpha;
  return test;
}

// The probability that the hypergeometric walk from (0, 0) to (n, m), a step right for a value
// of the first sample and up for one of the second, ever reaches |i m - j n| >= reach: the mass
// that leaves the band, summed as it leaves, so that small p-values keep their digits.
double two_sample_exit_probability(int64_t n, int64_t m, int64_t reach) {
  const auto outside = [&](int64_t i, int64_t j) { return std::abs(i * m - j * n) >= reach; };
  std::vector<double> row(static_cast<size_t>(m) + 1, 0.0), next(row.size(), 0.0);
  row[0] = 1.0;
  double exited = 0.0;
  for (int64_t i = 0; i <= n; ++i) {
    std::ranges::fill(next, 0.0);
    for (int64_t j = 0; j <= m; ++j) {
      const double mass = row[j];
      const int64_t left = (n - i) + (m - j);
      if (mass == 0.0 || left == 0) continue;
      const double right = mass * static_cast<double>(n - i) / static_cast<double>(left);
      const double up = mass - right;
      if (i < n) (outside(i + 1, j) ? exited : next[j]) += right;
      if (j < m) (outside(i, j + 1) ? exited : row[j + 1]) += up;
    }
    std::swap(row, next);
  }
  return std::min(1.0, exited);
}

}  // namespace

DistributionTest ks_uniformity_test(std::span<const double> values, double alpha) {
  check_alpha(alpha);
  const std::vector<double> sorted = sorted_sample(values);
  const auto n = static_cast<int64_t>(sorted.size());
  // F_n jumps from i / n to (i + 1) / n at the i-th smallest value.
  double distance = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double below = static_cast<double>(i) / n;
    const double above = static_cast<double>(i + 1) / n;
    distance = std::max({distance, above - sorted[i], sorted[i] - below});
  }
  return decide(n, 0, static_cast<double>(n), distance, alpha);
}

DistributionTest ks_two_sample_test(std::span<const double> first, std::span<const double> second,
                                    double alpha) {
  check_alpha(alpha);
  const std::vector<double> a = sorted_sample(first);
  const std::vector<double> b = sorted_sample(second);
  const auto n = static_cast<int64_t>(a.size());
  const auto m = static_cast<int64_t>(b.size());
  // Both empirical distribution functions after each distinct value, ties included.
  double distance = 0.0;
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    const double value = std::min(a[i], b[j]);
    while (i < a.size() && a[i] == value) ++i;
    while (j < b.size() && b[j] == value) ++j;
    distance = std::max(distance, std::abs(static_cast<double>(i) / n - static_cast<double>(j) / m));
  }
  const double effective_n = static_cast<double>(n) * static_cast<double>(m) / static_cast<double>(n + m);
  return decide(n, m, effective_n, distance, alpha);
}

double ks_p_value(double distance, double effective_n) {
  return kolmogorov_survival(stephens_scale(effective_n) * distance);
}

double ks_two_sample_p_value(double distance, int64_t n, int64_t m) {
  if (n < 1 || m < 1) throw std::invalid_argument("a two-sample p-value needs two non-empty samples");
  const auto reach = static_cast<int64_t>(std::llround(distance * static_cast<double>(n) * static_cast<double>(m)));
  if (reach <= 0) return 1.0;
  if (n * m <= kExactTwoSampleCells) return two_sample_exit_probability(n, m, reach);
  const double effective_n = static_cast<double>(n) * static_cast<double>(m) / static_cast<double>(n + m);
  return kolmogorov_survival(std::sqrt(effective_n) * distance);
}

double hoeffding_margin(double effective_n) {
  check_effective_n(effective_n);
  return std::sqrt(std::numbers::ln10 / (2.0 * effective_n));
}

HistogramBand uniform_histogram_band(int64_t n, double alpha) {
  check_alpha(alpha);
  if (n < 1) throw std::invalid_argument("a histogram band needs a non-empty sample");
  const boost::math::binomial law(static_cast<double>(n), 1.0 / kUniformityBins);
  const double tail = alpha / (2.0 * kUniformityBins);
  // Boost's quantiles of a discrete law round outwards by default: the band holds at least 1 - tail.
  return {boost::math::quantile(law, tail), boost::math::quantile(boost::math::complement(law, tail))};
}

double ks_detectable_distance(double effective_n, double alpha) {
  check_alpha(alpha);
  const double critical_distance = kolmogorov_upper_quantile(alpha) / stephens_scale(effective_n);
  return critical_distance + hoeffding_margin(effective_n);
}

UniformityHistogram uniformity_histogram(std::span<const double> values) {
  check_unit_interval(values);
  UniformityHistogram counts{};
  for (const double value : values) {
    ++counts[std::min(static_cast<int>(value * kUniformityBins), kUniformityBins - 1)];
  }
  return counts;
}

ChiSquareTest chi_square_uniformity(const UniformityHistogram& counts) {
  int64_t total = 0;
  for (const int64_t count : counts) total += count;
  if (total == 0) throw std::invalid_argument("a chi-square test needs a non-empty histogram");
  const double expected = static_cast<double>(total) / kUniformityBins;
  ChiSquareTest test;
  for (const int64_t count : counts) {
    const double excess = static_cast<double>(count) - expected;
    test.statistic += excess * excess / expected;
  }
  test.degrees_of_freedom = kUniformityBins - 1;
  const boost::math::chi_squared law(test.degrees_of_freedom);
  test.p_value = boost::math::cdf(boost::math::complement(law, test.statistic));
  return test;
}

}  // namespace specgate
