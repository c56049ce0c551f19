#include "impl/decoding/eqspec.h"

#include <algorithm>
#include <optional>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"
#include "impl/decoding/round.h"
#include "impl/model/kv_cache.h"

namespace specgate {
namespace {

// The baseline's drafter: proposes nothing, so every round is one plain decoding step.
class NoDrafter final : public Drafter {
 public:
  const Transformer* model() const override { return nullptr; }
  void start(BatchState&, const DecodeOptions&, KVCache*) override {}
  DraftProposal propose(BatchState&, int64_t, const DecodeOptions&, KVCache*) override { return {}; }
};

class Eqspec {
 public:
  Eqspec(const Transformer& target, Drafter& drafter, std::span<const SequenceRequest> requests,
         const DecodeOptions& options, DecodeStats& stats)
      : target_(target),
        drafter_(drafter),
        options_(options),
        stats_(stats),
        device_(target.options().device()),
        timer_(device_, options.time_phases),
        round_(target, drafter, options, stats, timer_),
        checker_(target, options) {
    for (const SequenceRequest& request : requests) {
      TORCH_CHECK(!request.prompt.empty(), "eqspec: sequence ", request.sequence_index, " has an empty prompt");
      state_.rows.emplace_back(request, options);
      capacity_ = std::max(capacity_, cache_capacity(request, options));
      state_.width = std::max(state_.width, state_.rows.back().content());
      order_.push_back(request.sequence_index);
    }
    for (size_t i = 0; i < state_.rows.size(); ++i) state_.rows[i].position_padding = state_.padding(i);
    results_.resize(requests.size());
  }

  std::vector<SequenceResult> run() {
    target_cache_.emplace(target_.make_cache(state_.batch_size(), capacity_));
    if (drafter_.model() != nullptr) draft_cache_.emplace(drafter_.model()->make_cache(state_.batch_size(), capacity_));
    const auto now = std::chrono::steady_clock::now();
    for (Row& row : state_.rows) row.admitted_at = now;

    const RoundOutcome prompts = round_.prefill(state_, *target_cache_, draft_cache());
    relayout(prompts);
    timer_.charge(stats_.realign_seconds);
    check_layout();
    while (!state_.rows.empty()) {
      RoundOutcome outcome;
      {
        const RoundCounter counter(options_, stats_);
        outcome = round_.run(state_, *target_cache_, draft_cache());
        ++steps_;
        relayout(outcome);
      }
      timer_.charge(stats_.realign_seconds);
      if (options_.check_invariants) checker_.check_round(outcome.records);
      check_layout();
    }
    return std::move(results_);
  }

 private:
  KVCache* draft_cache() { return draft_cache_ ? &*draft_cache_ : nullptr; }

  void check_layout() const {
    if (options_.check_invariants && !state_.rows.empty())
      checker_.check_layout(state_, *target_cache_, drafter_.model(), draft_cache_ ? &*draft_cache_ : nullptr);
  }

  // Finished rows leave with their results; the others are realigned.
  void relayout(const RoundOutcome& outcome) {
    std::vector<int64_t> going_on;
    for (size_t i = 0; i < state_.rows.size(); ++i) {
      Row& row = state_.rows[i];
      if (!row.finished) {
        going_on.push_back(static_cast<int64_t>(i));
        continue;
      }
      const auto position = std::find(order_.begin(), order_.end(), row.sequence_index) - order_.begin();
      results_[position] = finish_row(row, steps_, stats_);
    }
    if (going_on.empty()) {
      state_.rows.clear();
      return;
    }
    realign(state_, outcome, going_on, *target_cache_, draft_cache(), options_);
  }

  const Transformer& target_;
  Drafter& drafter_;
  const DecodeOptions& options_;
  DecodeStats& stats_;
  c10::Device device_;
  PhaseTimer timer_;
  SpeculativeRound round_;
  InvariantChecker checker_;
  BatchState state_;
  std::optional<KVCache> target_cache_, draft_cache_;
  int64_t capacity_ = 0;  // slots the longest sequence needs
  int64_t steps_ = 0;
  std::vector<int64_t> order_;
  std::vector<SequenceResult> results_;
};

}  // namespace

std::vector<SequenceResult> eqspec_generate(const Transformer& target, Drafter& drafter,
                                            std::span<const SequenceRequest> requests, const DecodeOptions& options,
                                            DecodeStats* stats) {
  TORCH_CHECK(options.draft_tokens >= 1 && options.max_new_tokens >= 1, "eqspec: K and max_new_tokens must be >= 1");
  if (requests.empty()) return {};
  DecodeStats local;
  return Eqspec(target, drafter, requests, options, stats != nullptr ? *stats : local).run();
}

std::vector<SequenceResult> nonspec_batch_generate(const Transformer& target, std::span<const SequenceRequest> requests,
                                                   const DecodeOptions& options, DecodeStats* stats) {
  TORCH_CHECK(options.max_new_tokens >= 1, "nonspec-batch: max_new_tokens must be >= 1");
  if (requests.empty()) return {};
  DecodeOptions plain = options;
  plain.draft_tokens = 0;
  NoDrafter none;
  DecodeStats local;
  return Eqspec(target, none, requests, plain, stats != nullptr ? *stats : local).run();
}

}  // namespace specgate
