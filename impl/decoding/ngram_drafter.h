#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "impl/decoding/drafter.h"

namespace specgate {

// The n-grams prompt lookup matches: the context's last n tokens, n from max_n down to min_n.
struct NgramOptions {
  int64_t min_n = 1;
  int64_t max_n = 3;
};

// InputError unless 1 <= min_n <= max_n <= 64.
void validate(const NgramOptions& options);

// Up to `k` tokens that followed an earlier occurrence of the last n tokens of `context`: the
// largest n that recurs, at its earliest occurrence (which may overlap the last n); none when
// no n-gram of min_n..max_n tokens recurs. Cut before the first of `eos_ids`, as transformers
// does. transformers' PromptLookupCandidateGenerator (min_n = 1) and vLLM's NgramProposer
// choose alike.
std::vector<int64_t> ngram_proposal(std::span<const int64_t> context, int64_t k, const NgramOptions& options,
                                    std::span<const int64_t> eos_ids = {});

// Prompt lookup: each row drafts from its own context (prompt and output, the pending token
// last) without a model, 0 to K tokens a round, never more than the row could keep before its
// max_new_tokens. Its drafts are not
// drawn: q is a point mass on each token.
class NgramDrafter final : public Drafter {
 public:
  explicit NgramDrafter(NgramOptions options);

  const Transformer* model() const override { return nullptr; }
  void start(BatchState&, const DecodeOptions&, KVCache*) override {}
  DraftProposal propose(BatchState& state, int64_t k, const DecodeOptions& options, KVCache* cache) override;

 private:
  NgramOptions options_;
};

}  // namespace specgate
