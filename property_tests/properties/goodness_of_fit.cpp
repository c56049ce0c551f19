#include "property_tests/properties/goodness_of_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <c10/util/Exception.h>

namespace specgate::props {
namespace {

// Regularized lower incomplete gamma P(a, x) by its series (x < a + 1).
double gamma_p_series(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < 10000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::abs(term) < std::abs(sum) * 1e-16) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Regularized upper incomplete gamma Q(a, x) by Lentz's continued fraction (x >= a + 1).
double gamma_q_fraction(double a, double x) {
  constexpr double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int n = 1; n < 10000; ++n) {
    const double an = -n * (n - a);
    b += 2.0;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1.0) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

}  // namespace

double chi_square_survival(double statistic, int64_t degrees_of_freedom) {
  TORCH_CHECK(degrees_of_freedom > 0, "chi_square_survival: degrees of freedom must be positive");
  if (!(statistic > 0.0)) return 1.0;
  const double a = 0.5 * static_cast<double>(degrees_of_freedom), x = 0.5 * statistic;
  return x < a + 1.0 ? 1.0 - gamma_p_series(a, x) : gamma_q_fraction(a, x);
}

GoodnessOfFit pearson_test(const std::map<Outcome, double>& reference, const std::map<Outcome, int64_t>& counts,
                           double min_expected) {
  GoodnessOfFit fit;
  for (const auto& [outcome, count] : counts) {
    fit.samples += count;
    const auto found = reference.find(outcome);
    if (found == reference.end() || found->second <= 0.0) fit.outside_support += count;
  }
  struct Cell {
    double expected = 0.0;
    int64_t observed = 0;
  };
  std::vector<Cell> kept;
  Cell pool;
  for (const auto& [outcome, probability] : reference) {
    if (probability <= 0.0) continue;
    const auto found = counts.find(outcome);
    const Cell cell{probability * static_cast<double>(fit.samples), found == counts.end() ? 0 : found->second};
    if (cell.expected >= min_expected) {
      kept.push_back(cell);
    } else {
      pool.expected += cell.expected;
      pool.observed += cell.observed;
    }
  }
  if (pool.expected >= min_expected || (kept.empty() && pool.expected > 0.0)) {
    kept.push_back(pool);
  } else if (pool.expected > 0.0) {
    Cell& smallest = *std::min_element(kept.begin(), kept.end(),
                                       [](const Cell& a, const Cell& b) { return a.expected < b.expected; });
    smallest.expected += pool.expected;
    smallest.observed += pool.observed;
  }
  fit.cells = static_cast<int64_t>(kept.size());
  fit.degrees_of_freedom = std::max<int64_t>(fit.cells - 1, 0);
  for (const Cell& cell : kept) fit.statistic += (cell.observed - cell.expected) * (cell.observed - cell.expected) / cell.expected;
  if (fit.outside_support > 0) {
    fit.p_value = 0.0;
  } else {
    fit.p_value = fit.degrees_of_freedom > 0 ? chi_square_survival(fit.statistic, fit.degrees_of_freedom) : 1.0;
  }
  return fit;
}

GoodnessOfFit combine(std::span<const GoodnessOfFit> parts) {
  GoodnessOfFit total;
  for (const GoodnessOfFit& part : parts) {
    total.statistic += part.statistic;
    total.degrees_of_freedom += part.degrees_of_freedom;
    total.cells += part.cells;
    total.samples += part.samples;
    total.outside_support += part.outside_support;
  }
  if (total.outside_support > 0) {
    total.p_value = 0.0;
  } else {
    total.p_value = total.degrees_of_freedom > 0 ? chi_square_survival(total.statistic, total.degrees_of_freedom) : 1.0;
  }
  return total;
}

}  // namespace specgate::props
