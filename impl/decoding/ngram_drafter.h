#pragma once

#include "impl/decoding/drafter.h"
#include "impl/decoding/ngram_lookup.h"

namespace specgate {

// Prompt lookup: each row drafts from its own context (prompt and output, the pending token
// last) without a model, 0 to K tokens a round, never more than the row could keep before its
// max_new_tokens. Its drafts are not
// drawn: q is a point mass on each token.
class NgramDrafter final : public Drafter {
 public:
  explicit NgramDrafter(NgramOptions options);

  const Transformer* model() const override { return nullptr; }
  DraftProposal propose(BatchState& state, int64_t k, const DecodeOptions& options, KVCache* cache) override;

 private:
  NgramOptions options_;
};

}  // namespace specgate
