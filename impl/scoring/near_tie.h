#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "impl/scoring/score_report.h"

namespace specgate {

// How far a floating-point type's rounding moves the difference between the log-probabilities
// of the two tokens most likely in float64, in nats (reports/scoring/near_tie.md); nullopt for
// a name it does not know.
std::optional<double> margin_rounding_of(std::string_view dtype);

// `threshold`, or the sum of what rounding in each of `dtypes` (nullopt: not recorded) can move a
// log-probability difference when that is larger: every computation that gave a log-probability
// compared, the engines' and the re-scorer's, adds its own.
double widened_near_tie_threshold(double threshold, std::initializer_list<std::optional<std::string>> dtypes);

// The near-tie threshold of a divergence between answers computed in these dtypes: the settings'
// threshold, or where `near_tie_by_dtype` holds it widened by both sides' rounding and, when a
// re-scorer is set, by its own.
double near_tie_threshold(const ScoreSettings& settings, const std::optional<std::string>& reference_dtype,
                          const std::optional<std::string>& candidate_dtype);

}  // namespace specgate
