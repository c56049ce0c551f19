#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_state.h"

namespace specgate {

class KVCache;
class Transformer;

struct DraftProposal {
  std::vector<std::vector<int64_t>> tokens;  // [B][K]
  at::Tensor distributions;                  // sampling: float64 [B, K, V], what each token was drawn from
  at::Tensor raw_distributions;              // sampling: float64 [B, K, V], the unshaped draft softmax
};

// Proposes K tokens per row each round. A drafter with a model keeps its own KV cache laid out
// like the batch (DESIGN.md I3) and the decoder moves it with the target's.
class Drafter {
 public:
  virtual ~Drafter() = default;

  // Takes in a new batch whose rows hold only their prompts: caches them and sets draft_cached.
  virtual void start(BatchState& state, const DecodeOptions& options) = 0;
  // Drafts K tokens for every row; the batch's pending last token is the first input.
  virtual DraftProposal propose(BatchState& state, int64_t k, const DecodeOptions& options) = 0;
  // Cache moves that follow the batch's (see KVCache).
  virtual void select_rows(const at::Tensor& rows) = 0;
  virtual void gather_slots(const at::Tensor& source_slots) = 0;
  virtual void truncate(int64_t length) = 0;

  // The draft model and its cache, or null for a drafter without one.
  virtual const Transformer* model() const = 0;
  virtual const KVCache* cache() const = 0;
};

}  // namespace specgate
