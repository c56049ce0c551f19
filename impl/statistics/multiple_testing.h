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
  // Whether each hypothesis was in the family Holm ran over, and that family's size.
  std::vector<bool> tested;
  size_t family_size = 0;
};

// Controls the family-wise error rate at alpha under any dependence between the tests. Throws
// std::invalid_argument for a p-value outside [0, 1] or NaN, or alpha outside (0, 1).
HolmDecision holm_bonferroni(std::span<const double> p_values, double alpha);

// Holm's procedure over the hypotheses that can reach their level (Tarone 1990). A hypothesis
// whose smallest attainable p-value exceeds alpha / m can never be rejected at Holm's strictest
// step, yet counting it lowers every other's level. The family is those attaining alpha / m for
// the smallest m at which at most m do; the rest are untested (adjusted p-value 1, not
// rejected). The screening looks at the design alone, never at the p-values, so the family-wise
// error rate stays at most alpha. Throws as holm_bonferroni, and for a smallest p-value outside
// [0, 1] or of another count.
HolmDecision holm_after_screening(std::span<const double> p_values, std::span<const double> smallest_p_values,
                                  double alpha);

}  // namespace specgate
