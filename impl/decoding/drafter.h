#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"

namespace specgate {

class KVCache;
class Transformer;

// Row i proposes tokens[i, :lengths[i]]; the rest of its row is padding that verification
// never keeps.
struct DraftProposal {
  at::Tensor tokens;             // int64 [B, k], k the longest row's drafts (at most K), on the
                                 // draft model's device (the host without one)
  std::vector<int64_t> lengths;  // drafts per row; empty when every row proposes k
  at::Tensor distributions;      // sampling: float64 [B, k, V], what each token was drawn from;
                                 // undefined for a drafter whose tokens are not drawn (a point mass)

  // Each row's draft count: `lengths`, or k for every row.
  std::vector<int64_t> row_lengths() const {
    return lengths.empty() ? std::vector<int64_t>(tokens.size(0), tokens.size(1)) : lengths;
  }
};

// Proposes up to K tokens per row each round. A drafter with a model drafts through a KV cache
// that the decoder owns and lays out like the batch (DESIGN.md I3), moving it with the
// target's, and fills with each prompt in the prompt pass; a drafter without one gets a null
// cache.
class Drafter {
 public:
  virtual ~Drafter() = default;

  // The draft model, or null for a drafter without one.
  virtual const Transformer* model() const = 0;
  // Drafts up to K tokens for every row; the batch's pending last token is the first input.
  virtual DraftProposal propose(BatchState& state, int64_t k, const DecodeOptions& options, KVCache* cache) = 0;
};

// Proposes nothing: every round of a chain decoder is one plain decoding step (nonspec-batch),
// and a decoder that drafts otherwise runs its prompt pass with it.
class NoDrafter final : public Drafter {
 public:
  const Transformer* model() const override { return nullptr; }
  DraftProposal propose(BatchState&, int64_t, const DecodeOptions&, KVCache*) override { return {}; }
};

}  // namespace specgate
