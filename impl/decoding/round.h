#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "impl/decoding/batch_layout.h"
#include "impl/decoding/decode_types.h"
#include "impl/decoding/dispatch_counter.h"
#include "impl/decoding/drafter.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"

namespace specgate {

class Transformer;

// The work EQSPEC and EXSPEC share on a left-padded batch whose caches are laid out like it
// (round.cpp tells the story of a round).
class SpeculativeRound {
 public:
  SpeculativeRound(const Transformer& target, Drafter& drafter, const DecodeOptions& options, DecodeStats& stats,
                   PhaseTimer& timer)
      : target_(target), drafter_(drafter), options_(options), stats_(stats), timer_(timer) {}

  // The prompt pass of `rows`, each holding only its prompt, packed without padding
  // (prompt_pass.h): every row gains its first token. Returns the pass's caches, in which row
  // i's prompt K/V lie at its target_slots and draft_slots, in cache row `cache_rows[i]`.
  StagedPrompts prefill(std::vector<Row>& rows);
  // Draft, verify, accept: K drafts per row, one target pass over them, each row gains its
  // kept drafts and the bonus (ending at EOS or max_new_tokens, exactly there) and keeps their
  // slots in the caches. Returns what each row's round decided.
  std::vector<RoundRecord> run(BatchLayout& batch);

 private:
  const Transformer& target_;
  Drafter& drafter_;
  const DecodeOptions& options_;
  DecodeStats& stats_;
  PhaseTimer& timer_;
};

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

// Appends `tokens` to `row`, ending it at its first EOS or at max_new_tokens, exactly there;
// returns those appended.
std::vector<int64_t> append_tokens(Row& row, const std::vector<int64_t>& tokens, const DecodeOptions& options);

// The finished rows of `batch` leave it, their results returned as of `step`; the others are
// re-padded to their new minimal width (EQSPEC's realignment).
std::vector<SequenceResult> leave_finished(BatchLayout& batch, int64_t step, DecodeStats& stats);

// The result of a finished row, which leaves while others go on or not; records its latency
// in `stats` as of `step`.
SequenceResult finish_row(Row& row, int64_t step, bool others_go_on, DecodeStats& stats);

}  // namespace specgate
