#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>

#include <ATen/core/Tensor.h>

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

// The order sampling_distribution() applies the warpers in.
inline constexpr const char* kWarperOrder = "temperature, top-k, top-p, min-p";

// The distribution to sample from: softmax(logits / temperature), restricted to the top_k
// most likely tokens, then to the smallest set whose mass reaches top_p, then to the tokens at
// least min_p times as likely as the most likely one (the order of Hugging Face's warpers),
// renormalised. logits [..., V] -> float64 probabilities [..., V].
at::Tensor sampling_distribution(const at::Tensor& logits, const SamplingParams& params);

// The same with each row's own warpers: logits [B, ..., V] and one setting per row, of which
// one at least samples. A greedy row's distribution is that of temperature 1 and goes unused.
// Each row's distribution is bitwise the one its own setting gives it in a batch of its own.
at::Tensor sampling_distribution(const at::Tensor& logits, std::span<const SamplingParams> rows);

// A sequence's own random stream: its draws depend only on the run seed and the sequence,
// never on which other sequences share a batch.
class SequenceRng {
 public:
  SequenceRng(uint64_t run_seed, uint64_t sequence_index);
  double uniform();  // in [0, 1)

 private:
  std::mt19937_64 engine_;
};

// Draws a token from a 1-D distribution by inverse CDF with one uniform of `rng`.
int64_t sample_token(const at::Tensor& probs, SequenceRng& rng);

}  // namespace specgate
