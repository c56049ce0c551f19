#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/decode_types.h"
#include "impl/decoding/dispatch_counter.h"
#include "impl/decoding/drafter.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"
#include "impl/model/kv_cache.h"

namespace specgate {

class Transformer;

// What a prompt pass or a round left in a batch's caches, in batch order: the run of slots
// each row's K/V still occupy (SlotRun::row is the batch row), and what the round decided.
struct RoundOutcome {
  std::vector<SlotRun> target_kept, draft_kept;
  std::vector<RoundRecord> records;  // one per row after a round; none after a prompt pass
};

// The work EQSPEC and EXSPEC share on a left-padded batch whose caches are laid out like it
// (round.cpp tells the story of a round).
class SpeculativeRound {
 public:
  SpeculativeRound(const Transformer& target, Drafter& drafter, const DecodeOptions& options, DecodeStats& stats,
                   PhaseTimer& timer)
      : target_(target), drafter_(drafter), options_(options), stats_(stats), timer_(timer) {}

  // Caches the prompts in both (empty) caches and gives every row its first token.
  RoundOutcome prefill(BatchState& state, KVCache& target_cache, KVCache* draft_cache);
  // Draft, verify, accept: K drafts per row, one target pass over them, each row gains its
  // kept drafts and the bonus (ending at EOS or max_new_tokens, exactly there).
  RoundOutcome run(BatchState& state, KVCache& target_cache, KVCache* draft_cache);

 private:
  const Transformer& target_;
  Drafter& drafter_;
  const DecodeOptions& options_;
  DecodeStats& stats_;
  PhaseTimer& timer_;
};

// Realign (EQSPEC): `state` keeps the rows `going_on` (batch rows, in order), re-padded to the
// new minimal width, and both caches follow with one batched gather per layer (or, with
// options.naive_realign, as published decoders do).
void realign(BatchState& state, const RoundOutcome& outcome, const std::vector<int64_t>& going_on,
             KVCache& target_cache, KVCache* draft_cache, const DecodeOptions& options);

// Adds what one round dispatches, from its construction to its destruction, to `stats`, when
// options.count_dispatches asks for it.
class RoundCounter {
 public:
  RoundCounter(const DecodeOptions& options, DecodeStats& stats) : stats_(stats) {
    if (options.count_dispatches) counter_.emplace();
  }
  ~RoundCounter() {
    if (!counter_) return;
    stats_.operators += counter_->counts().operators;
    stats_.host_syncs += counter_->counts().host_syncs;
    ++stats_.counted_rounds;
  }
  RoundCounter(const RoundCounter&) = delete;
  RoundCounter& operator=(const RoundCounter&) = delete;

 private:
  DecodeStats& stats_;
  std::optional<DispatchCounter> counter_;
};

// The result of a finished row; records its latency in `stats` as of `step`.
SequenceResult finish_row(Row& row, int64_t step, DecodeStats& stats);

}  // namespace specgate
