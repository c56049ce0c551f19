#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace specgate {

// The values of one independent unit of a sample (an answer's PIT values), and the stratum it
// may be exchanged within (its question).
struct SampleUnit {
  std::vector<double> values;
  int64_t stratum = 0;
};

// A two-sample Kolmogorov-Smirnov test whose unit is the answer, not the token: D between the
// pooled values of the two sides, its p-value from re-drawing which units are on which side
// within each stratum (a stratum's side counts kept), each drawing judged by D sqrt(n m / (n + m))
// with n and m its sides' value counts, which relabelling answers of unequal lengths changes.
// Valid whatever the dependence between the values of one unit, as long as units are independent
// and, under the hypothesis, the units of one stratum are exchangeable between the sides: answers
// of the same question from two engine settings that sample alike.
struct PermutationKsTest {
  int64_t first_units = 0, second_units = 0;
  int64_t first_values = 0, second_values = 0;
  // Units a stratum holds on both sides: those the permutations move. The rest stay put.
  int64_t exchangeable_units = 0;
  double distance = 0.0;  // D of the pooled values
  // Relabellings drawn at random, or every distinct one (exact) where they are no more than the
  // permutations asked for.
  int64_t permutations = 0;
  bool exact = false;
  // (1 + permutations with D sqrt(n m / (n + m)) >= the observed's) / (1 + permutations), or exact:
  // the share of all relabellings with a statistic that large. Valid at any count.
  double p_value = 1.0;
  // The smallest p-value the design can give whatever the answers hold: 1 / (1 + permutations), or
  // exact, one over the number of relabellings (a subtask of q questions with one answer a side
  // has 2^q). A test that cannot reach its level can never reject.
  double smallest_p_value = 0.0;
  // n_eff of each side counted in units, (sum of lengths)^2 / sum of squared lengths: the
  // number of independent units the pooled values are worth.
  double first_effective_units = 0.0, second_effective_units = 0.0;
  // The permutation distribution's upper `level` quantile plus Hoeffding's margin over units at
  // 1 / (1 / first + 1 / second) effective units: a true sup-distance this large is rejected at
  // `level` with probability >= 0.9 (a bound; see ks_detectable_distance).
  double detectable_distance = 1.0;
  double level = 0.05;  // the level detectable_distance is stated at
};

// Throws std::invalid_argument for a side without values, a value outside [0, 1] or NaN, no
// permutations, or a level outside (0, 1). Deterministic in `seed`.
PermutationKsTest permutation_ks_test(std::span<const SampleUnit> first, std::span<const SampleUnit> second,
                                      int64_t permutations, uint64_t seed, double level);

}  // namespace specgate
