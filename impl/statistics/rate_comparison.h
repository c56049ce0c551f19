#pragma once

#include <cstdint>
#include <span>

namespace specgate {

// The events of one independent unit (an answer's tokens on the support's boundary), its trials
// (its tokens) and the stratum it may be exchanged within (its question).
struct UnitEvents {
  int64_t events = 0, trials = 0;
  int64_t stratum = 0;
};

// Whether the first side shows the event more often per trial than the second, answers as units:
// the difference of the sides' rates, its p-value from the stratified relabellings of the units
// (relabel). One-sided: only an excess on the first side. Valid however the events cluster within
// a unit, as long as units are independent and, under the hypothesis, exchangeable within their
// stratum; tokens taken as independent (a binomial test) reject far more often than alpha when
// events cluster in answers. p 1 when neither side has an event.
struct RateComparison {
  int64_t first_events = 0, first_trials = 0;
  int64_t second_events = 0, second_trials = 0;
  int64_t permutations = 0;  // relabellings visited
  bool exact = false;        // every distinct relabelling once
  double p_value = 1.0;
  double smallest_p_value = 0.0;  // what the design can give at best
};

// Throws std::invalid_argument for negative counts, more events than trials, a side without
// trials, or no permutations. Deterministic in `seed`.
RateComparison compare_rates(std::span<const UnitEvents> first, std::span<const UnitEvents> second, int64_t permutations,
                             uint64_t seed);

}  // namespace specgate
