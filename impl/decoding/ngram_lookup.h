#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace specgate {

// The n-grams prompt lookup matches: the context's last n tokens, n from max_n down to min_n.
struct NgramOptions {
  int64_t min_n = 1;
  int64_t max_n = 3;
  bool through_eos = false;  // proposals run on past EOS ids, as vLLM's NgramProposer's do
};

// InputError unless 1 <= min_n <= max_n <= 64.
void validate(const NgramOptions& options);

// Up to `k` tokens that followed an earlier occurrence of the last n tokens of `context`: the
// largest n that recurs, at its earliest occurrence (which may overlap the last n); none when
// no n-gram of min_n..max_n tokens recurs. Cut before the first of `eos_ids`, as transformers
// does, unless through_eos. transformers' PromptLookupCandidateGenerator (min_n = 1) and vLLM's
// NgramProposer choose the same occurrence.
std::vector<int64_t> ngram_proposal(std::span<const int64_t> context, int64_t k, const NgramOptions& options,
                                    std::span<const int64_t> eos_ids = {});

}  // namespace specgate
