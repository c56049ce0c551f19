#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"

namespace specgate {

class KVCache;
class Transformer;

struct DraftProposal {
  at::Tensor tokens;         // int64 [B, K], on the draft model's device (the host without one)
  at::Tensor distributions;  // sampling: float64 [B, K, V], what each token was drawn from
};

// Proposes K tokens per row each round. A drafter with a model drafts through a KV cache
// that the decoder owns and lays out like the batch (DESIGN.md I3), moving it with the
// target's; a drafter without one gets a null cache.
class Drafter {
 public:
  virtual ~Drafter() = default;

  // The draft model, or null for a drafter without one.
  virtual const Transformer* model() const = 0;
  // Takes in a batch whose rows hold only their prompts: caches them all in the empty `cache`.
  virtual void start(BatchState& state, const DecodeOptions& options, KVCache* cache) = 0;
  // Drafts K tokens for every row; the batch's pending last token is the first input.
  virtual DraftProposal propose(BatchState& state, int64_t k, const DecodeOptions& options, KVCache* cache) = 0;
};

}  // namespace specgate
