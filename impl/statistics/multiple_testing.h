#pragma once

#include <span>
#include <vector>

namespace specgate {

// Holm's step-down procedure (Holm 1979), in the order the p-values were given.
struct HolmDecision {
  // Sorted ascending, the i-th smallest of m p-values (i from 1) becomes
  // max over j <= i of min(1, (m - j + 1) p_(j)): monotone in p, capped at 1.
  std::vector<double> adjusted_p_values;
  std::vector<bool> rejected;  // adjusted p-value <= alpha
};

// Controls the family-wise error rate at alpha under any dependence between the tests. Throws
// std::invalid_argument for a p-value outside [0, 1] or NaN, or alpha outside (0, 1).
HolmDecision holm_bonferroni(std::span<const double> p_values, double alpha);

}  // namespace specgate
