#pragma once

#include <cstdint>
#include <vector>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/decode_types.h"
#include "impl/decoding/drafter.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"

namespace specgate {

class KVCache;
class Transformer;

// What one cache still holds of a row after a step, before the batch's next layout is known:
// `kept` content tokens at slots old_padding + offset + j. The row will take the cache to
// hold `claimed` tokens, which differs from `kept` only under an injected fault.
struct CacheKeep {
  int64_t kept = 0;
  int64_t offset = 0;
  int64_t claimed = 0;
};

// What a step did to the rows of a batch, in batch order.
struct StepOutcome {
  std::vector<int64_t> old_padding;
  std::vector<CacheKeep> target_keep, draft_keep;
  std::vector<RoundRecord> records;  // one per row after a round; none after a prompt pass
};

// The work EQSPEC and EXSPEC share: the prompt pass and the speculative round on a
// left-padded batch whose caches are laid out like it. Rows gain their new tokens (ending at
// EOS or max_new_tokens exactly); moving the caches to the next layout is the caller's.
class SpeculativeStep {
 public:
  SpeculativeStep(const Transformer& target, Drafter& drafter, const DecodeOptions& options, DecodeStats& stats,
                  PhaseTimer& timer)
      : target_(target), drafter_(drafter), options_(options), stats_(stats), timer_(timer) {}

  // Caches the prompts in both (empty) caches and gives every row its first token.
  StepOutcome prefill(BatchState& state, KVCache& target_cache, KVCache* draft_cache);
  // Drafts K tokens per row, verifies them in one target pass, appends kept drafts and bonus.
  StepOutcome round(BatchState& state, KVCache& target_cache, KVCache* draft_cache);

 private:
  const Transformer& target_;
  Drafter& drafter_;
  const DecodeOptions& options_;
  DecodeStats& stats_;
  PhaseTimer& timer_;
};

// The result of a finished row; records its latency in `stats` as of `step`.
SequenceResult finish_row(Row& row, int64_t step, DecodeStats& stats);

}  // namespace specgate
