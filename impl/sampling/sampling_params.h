#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace specgate {

// temperature 0 means greedy. top_k 0, top_p 1 and min_p 0 switch those filters off.
struct SamplingParams {
  double temperature = 0.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
  uint64_t seed = 0;

  bool greedy() const { return temperature == 0.0; }
  // The same warpers (the seed aside).
  bool same_warpers(const SamplingParams& other) const {
    return temperature == other.temperature && top_k == other.top_k && top_p == other.top_p && min_p == other.min_p;
  }
};

// A temperature is 0 (greedy) or at least this: engines decode greedily below it (vLLM's
// _SAMPLING_EPS), and logits scaled by a subnormal one overflow.
inline constexpr double kMinTemperature = 1e-5;

// What is wrong with a setting: its field (temperature, top_k, top_p or min_p) and why.
struct SamplingProblem {
  std::string field, problem;
};
std::optional<SamplingProblem> sampling_problem(const SamplingParams& params);

// Throws InputError naming the offending flag.
void validate(const SamplingParams& params);

// "greedy", or "temperature 0.8, top-k off, top-p 0.95, min-p 0.05".
std::string describe(const SamplingParams& params);

}  // namespace specgate
