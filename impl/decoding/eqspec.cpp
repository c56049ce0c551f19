#include "impl/decoding/eqspec.h"

#include <algorithm>
#include <optional>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/decoding/batch_tensors.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/naive_realign.h"
#include "impl/decoding/phase_timer.h"
#include "impl/decoding/speculative_step.h"
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
        step_(target, drafter, options, stats, timer_),
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

    relayout(step_.prefill(state_, *target_cache_, draft_cache()), std::nullopt);
    timer_.charge(stats_.realign_seconds);
    check_layout();
    while (!state_.rows.empty()) {
      const int64_t width = state_.width, k = options_.draft_tokens;
      const StepOutcome outcome = step_.round(state_, *target_cache_, draft_cache());
      ++steps_;
      const std::optional<int64_t> inflated =
          faults().has(Fault::kPaddingNeverRemoved) ? std::optional<int64_t>(width + k + 1) : std::nullopt;
      relayout(outcome, inflated);
      timer_.charge(stats_.realign_seconds);
      if (options_.check_invariants) checker_.check_round(outcome.records);
      check_layout();
    }
    return std::move(results_);
  }

 private:
  const FaultSet& faults() const { return options_.faults; }
  KVCache* draft_cache() { return draft_cache_ ? &*draft_cache_ : nullptr; }

  void check_layout() const {
    if (options_.check_invariants && !state_.rows.empty())
      checker_.check_layout(state_, *target_cache_, drafter_.model(), draft_cache_ ? &*draft_cache_ : nullptr);
  }

  // Unpad-append-repad: finished rows leave, the rest are re-padded to the new minimal width
  // (or `inflated_width`), and both caches follow with one contiguous copy per row and layer.
  void relayout(const StepOutcome& outcome, std::optional<int64_t> inflated_width) {
    const std::vector<int64_t>& old_padding = outcome.old_padding;
    const std::vector<CacheKeep>& target_keep = outcome.target_keep;
    const std::vector<CacheKeep>& draft_keep = outcome.draft_keep;
    std::vector<int64_t> kept_rows;
    int64_t new_width = 0;
    for (size_t i = 0; i < state_.rows.size(); ++i) {
      Row& row = state_.rows[i];
      if (row.finished) {
        const auto position = std::find(order_.begin(), order_.end(), row.sequence_index) - order_.begin();
        results_[position] = finish_row(row, steps_, stats_);
        continue;
      }
      kept_rows.push_back(static_cast<int64_t>(i));
      new_width = std::max(new_width, row.content());
    }
    if (kept_rows.empty()) {
      state_.rows.clear();
      return;
    }
    if (inflated_width) new_width = std::max(new_width, *inflated_width);

    const bool shift_target = !faults().has(Fault::kKvNotShifted);
    std::vector<RowMove> target_moves, draft_moves;
    std::vector<Row> rows;
    for (int64_t i : kept_rows) {
      Row& row = state_.rows[i];
      const int64_t new_padding = new_width - row.content();
      target_moves.push_back({shift_target ? old_padding[i] : new_padding, new_padding, target_keep[i].kept,
                              shift_target ? target_keep[i].offset : 0});
      draft_moves.push_back({old_padding[i], new_padding, draft_keep[i].kept, draft_keep[i].offset});
      row.target_cached = target_keep[i].claimed;
      row.draft_cached = draft_keep[i].claimed;
      row.position_padding = faults().has(Fault::kStalePositionIds) ? old_padding[i] : new_padding;
      rows.push_back(std::move(row));
    }
    if (kept_rows.size() < state_.rows.size()) {
      const at::Tensor index = at::tensor(kept_rows, at::TensorOptions().dtype(at::kLong)).to(device_);
      target_cache_->select_rows(index);
      if (draft_cache_) draft_cache_->select_rows(index);
    }
    move_cache(target_moves, new_width, *target_cache_);
    if (draft_cache_) move_cache(draft_moves, new_width, *draft_cache_);
    state_.rows = std::move(rows);
    state_.width = new_width;
  }

  // Rows that stay where they are (every row grew by the same amount) need no copy at all.
  void move_cache(const std::vector<RowMove>& moves, int64_t new_width, KVCache& cache) const {
    if (options_.naive_realign) return naive_realign(cache, moves, new_width - 1);
    const bool in_place = new_width - 1 <= cache.length() && std::all_of(moves.begin(), moves.end(), [](const RowMove& m) {
                            return m.old_padding + m.offset == m.new_padding;
                          });
    if (in_place) {
      cache.truncate(new_width - 1);
    } else {
      cache.shift_rows(slot_runs(moves), new_width - 1);
    }
  }

  const Transformer& target_;
  Drafter& drafter_;
  const DecodeOptions& options_;
  DecodeStats& stats_;
  c10::Device device_;
  PhaseTimer timer_;
  SpeculativeStep step_;
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
