#include "impl/scoring/near_tie.h"

#include <algorithm>
#include <map>

namespace specgate {

std::optional<double> margin_rounding_of(std::string_view dtype) {
  // The largest change of the two most likely tokens' log-probability difference against
  // float64 over 908 positions of SmolLM2-135M-Instruct, rounded up.
  static const std::map<std::string_view, double> rounding = {
      {"float64", 0.0}, {"float32", 1e-4}, {"bfloat16", 0.9}, {"float16", 0.07}};
  const auto found = rounding.find(dtype);
  return found == rounding.end() ? std::nullopt : std::optional(found->second);
}

double widened_near_tie_threshold(double threshold, std::initializer_list<std::optional<std::string>> dtypes) {
  double rounding = 0.0;
  for (const std::optional<std::string>& dtype : dtypes) rounding += dtype ? margin_rounding_of(*dtype).value_or(0.0) : 0.0;
  return std::max(threshold, rounding);
}

double near_tie_threshold(const ScoreSettings& settings, const std::optional<std::string>& reference_dtype,
                          const std::optional<std::string>& candidate_dtype) {
  if (!settings.near_tie_by_dtype) return settings.near_tie_threshold;
  const std::optional<std::string> rescorer =
      settings.rescore_dtype.empty() ? std::nullopt : std::optional(settings.rescore_dtype);
  return widened_near_tie_threshold(settings.near_tie_threshold, {reference_dtype, candidate_dtype, rescorer});
}

}  // namespace specgate
