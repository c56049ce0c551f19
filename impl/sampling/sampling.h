#pragma once

#include <cstdint>
#include <random>
#include <span>

#include <ATen/core/Tensor.h>

#include "impl/sampling/sampling_params.h"

namespace specgate {

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
