#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace specgate::props {

// P(X >= statistic) for X chi-square distributed with `degrees_of_freedom` (> 0).
double chi_square_survival(double statistic, int64_t degrees_of_freedom);

// Pearson's chi-square test of observed outputs against the exact distribution.
struct GoodnessOfFit {
  double statistic = 0.0;        // Pearson's X^2 over the pooled cells
  int64_t degrees_of_freedom = 0;
  int64_t cells = 0;             // after pooling
  int64_t samples = 0;
  int64_t outside_support = 0;   // observations the reference gives probability zero
  double p_value = 1.0;          // 0 when anything fell outside the support
};

using Outcome = std::vector<int64_t>;

// One multinomial sample against `reference` (probabilities over the support, summing to
// one). Cells expected fewer than `min_expected` times are pooled into one cell; a pool still
// below it joins the smallest kept cell.
GoodnessOfFit pearson_test(const std::map<Outcome, double>& reference, const std::map<Outcome, int64_t>& counts,
                           double min_expected = 10.0);

// Independent multinomial samples (one per prompt): the statistics and degrees of freedom add up.
GoodnessOfFit combine(std::span<const GoodnessOfFit> parts);

}  // namespace specgate::props
