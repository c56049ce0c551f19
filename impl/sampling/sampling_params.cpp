#include "impl/sampling/sampling_params.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "impl/common/error.h"
#include "impl/common/short_number.h"

namespace specgate {

std::optional<SamplingProblem> sampling_problem(const SamplingParams& params) {
  if (!(params.temperature >= 0.0) || !std::isfinite(params.temperature))
    return SamplingProblem{"temperature", "must be a finite number >= 0, got " + short_number(params.temperature)};
  if (params.temperature > 0.0 && params.temperature < kMinTemperature)
    return SamplingProblem{"temperature", short_number(params.temperature) + " is below " + short_number(kMinTemperature) +
                                              ", where engines decode greedily; give 0 for greedy decoding"};
  if (params.top_k < 0) return SamplingProblem{"top_k", "must be >= 0, got " + std::to_string(params.top_k)};
  if (!(params.top_p > 0.0 && params.top_p <= 1.0))
    return SamplingProblem{"top_p", "must be in (0, 1], got " + short_number(params.top_p)};
  if (!(params.min_p >= 0.0 && params.min_p <= 1.0))
    return SamplingProblem{"min_p", "must be in [0, 1], got " + short_number(params.min_p)};
  return std::nullopt;
}

void validate(const SamplingParams& params) {
  if (const std::optional<SamplingProblem> wrong = sampling_problem(params)) {
    std::string flag = "--" + wrong->field;
    std::replace(flag.begin(), flag.end(), '_', '-');
    throw InputError(flag + ": " + wrong->problem);
  }
}

std::string describe(const SamplingParams& params) {
  if (params.greedy()) return "greedy";
  return "temperature " + short_number(params.temperature) + ", top-k " +
         (params.top_k > 0 ? std::to_string(params.top_k) : "off") + ", top-p " +
         (params.top_p < 1.0 ? short_number(params.top_p) : "off") + ", min-p " +
         (params.min_p > 0.0 ? short_number(params.min_p) : "off");
}

}  // namespace specgate
