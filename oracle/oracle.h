#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "impl/common/sequence_result.h"
#include "impl/common/token_logprob.h"
#include "impl/model/transformer.h"
#include "impl/sampling/sampling.h"

namespace specgate {

struct OracleOptions {
  int64_t max_new_tokens = 128;
  SamplingParams sampling;          // greedy by default
  std::vector<int64_t> eos_ids;     // generation stops after the first of these
  int64_t top_logprobs = 5;         // alternatives recorded per generated token
};

// The reference: plain decoding of one prompt alone (batch 1, no padding, target model only),
// greedy or sampled from `SequenceRng(options.sampling.seed, sequence_index)`, one target pass
// per token. The recorded log-probabilities are those of the model itself (temperature 1, no
// filtering).
SequenceResult oracle_generate(const Transformer& model, std::span<const int64_t> prompt, const OracleOptions& options,
                               uint64_t sequence_index);

// Each token of `generated` after `prompt` and the tokens before it, under the model.
struct GeneratedLogprobs {
  std::vector<double> chosen;                     // the token's own log-probability
  std::vector<std::vector<TokenLogprob>> top;     // the `k` most likely tokens there, best first
};

// What oracle_generate records, and each token's own log-probability, from one forward pass over
// tokens some other decoder generated.
GeneratedLogprobs oracle_generated_logprobs(const Transformer& model, std::span<const int64_t> prompt,
                                            std::span<const int64_t> generated, int64_t k);

// Each token of `prompt` after the first: its own log-probability after the tokens before it, then
// the `k` most likely tokens there, as vLLM's prompt_logprobs give them (the token itself first,
// not repeated among the alternatives). One forward pass.
std::vector<std::vector<TokenLogprob>> oracle_prompt_logprobs(const Transformer& model, std::span<const int64_t> prompt, int64_t k);

}  // namespace specgate
