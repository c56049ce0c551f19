#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "impl/scoring/score_report.h"

namespace specgate {

// How far a floating-point type's rounding moves the difference between the log-probabilities
// of the two tokens most likely in float64, in nats (reports/scoring/near_tie.md); nullopt for
// a name it does not know.
std::optional<double> margin_rounding_of(std::string_view dtype);

// The near-tie threshold of a divergence between answers computed in these dtypes (nullopt:
// not recorded): the settings' threshold, or where `near_tie_by_dtype` holds the sum of both
// sides' rounding when that is larger.
double near_tie_threshold(const ScoreSettings& settings, const std::optional<std::string>& reference_dtype,
                          const std::optional<std::string>& candidate_dtype);

}  // namespace specgate
