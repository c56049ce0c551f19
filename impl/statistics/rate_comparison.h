#pragma once

#include <cstdint>

namespace specgate {

// Whether two sides show an event (a token outside the support, or at its boundary) at the same
// rate per trial: given the events of both together, the first side's count is
// Binomial(events, first_trials / (first_trials + second_trials)) under the hypothesis. The
// exact p-value is scipy.stats.binomtest's: two-sided, the outcomes no more likely than the
// observed one; greater, the first side's count or more. 1 when neither side has an event.
enum class RateAlternative { kTwoSided, kGreater };

struct RateComparison {
  int64_t first_events = 0, first_trials = 0;
  int64_t second_events = 0, second_trials = 0;
  double p_value = 1.0;
};

// Throws std::invalid_argument for negative counts, more events than trials, or a side
// without trials.
RateComparison compare_rates(int64_t first_events, int64_t first_trials, int64_t second_events, int64_t second_trials,
                             RateAlternative alternative);

}  // namespace specgate
