#pragma once

#include <cstdint>
#include <span>

namespace specgate {

// Whether independent trials, each a success with its own stated probability, succeeded as
// often as those probabilities say: the accepted drafts of a speculative decoder against what
// its two models imply. The successes minus their expectation, over its standard deviation,
// is standard normal for many trials (Lyapunov's central limit theorem; trials whose
// probability depends on earlier outcomes make it a martingale, and the martingale CLT gives
// the same law). The effect is the ratio observed / expected.
struct BernoulliSumTest {
  int64_t trials = 0;
  int64_t observed = 0;   // successes
  double expected = 0.0;  // the sum of the probabilities
  double variance = 0.0;  // the sum of p (1 - p)
  int64_t ruled_out = 0;  // successes at probability 0 and failures at 1: p-value 0
  double z = 0.0;         // (observed - expected) / sqrt(variance); 0 when the variance is 0
  double p_value = 1.0;   // two-sided
  // A 1 - alpha confidence interval for the ratio: (observed -+ z_{1-alpha/2} sd) / expected.
  double ratio = 1.0, ratio_low = 1.0, ratio_high = 1.0;
  // The smallest |ratio - 1| the test at alpha rejects with probability 0.9:
  // (z_{1-alpha/2} + z_{0.9}) sd / expected.
  double detectable_ratio_change = 0.0;
  double alpha = 0.05;
  // How far rounding may move the expectation, in successes and in its direction (the sign
  // matters): the p-value is that of the difference beyond the interval [min(0, s), max(0, s)],
  // so that an engine whose rounding moves its successes no farther passes at any size.
  double allowed_shift = 0.0;
  bool rejected = false;  // p_value <= alpha
};

struct BernoulliTrial {
  double probability = 0.0;  // of success
  bool success = false;
};

// Throws std::invalid_argument for a probability outside [0, 1] or NaN, no trials, alpha
// outside (0, 1), or a shift that is not finite. Probabilities of 0 or 1 add nothing to the
// variance; an outcome they rule out makes the p-value 0.
BernoulliSumTest bernoulli_sum_test(std::span<const BernoulliTrial> trials, double alpha, double allowed_shift = 0.0);

}  // namespace specgate
