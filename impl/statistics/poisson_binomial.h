#pragma once

#include <cstdint>
#include <span>

namespace specgate {

// P(S >= at_least) for S the number of successes of independent trials, each with its own
// probability (a Poisson-binomial law); also valid when each trial's probability is its chance
// given the outcomes before it. Exact by dynamic programming over the counts below `at_least`
// where that takes at most 5e7 steps, else Chernoff's bound exp(-mu) (e mu / k)^k, which is
// larger (a conservative p-value). Throws std::invalid_argument for a probability outside [0, 1]
// or NaN, or a negative count.
double poisson_binomial_upper_tail(std::span<const double> probabilities, int64_t at_least);

}  // namespace specgate
