#include "impl/decoding/eqspec.h"

#include <algorithm>
#include <optional>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/decoding/acceptance.h"
#include "impl/decoding/batch_tensors.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/phase_timer.h"
#include "impl/model/kv_cache.h"

namespace specgate {
namespace {

bool is_eos(const DecodeOptions& options, int64_t token) {
  return std::find(options.eos_ids.begin(), options.eos_ids.end(), token) != options.eos_ids.end();
}

// Appends `tokens` to `row`, ending it at its first EOS or at max_new_tokens, exactly there.
std::vector<int64_t> append_tokens(Row& row, const std::vector<int64_t>& tokens, const DecodeOptions& options) {
  const bool keep_all = options.faults.has(Fault::kTokensAfterEosKept);
  std::vector<int64_t> appended;
  for (int64_t token : tokens) {
    if (!keep_all && row.generated() == options.max_new_tokens) break;
    row.tokens.push_back(token);
    appended.push_back(token);
    if (is_eos(options, token) && !row.finished) {
      row.finished = true;
      row.finish_reason = FinishReason::kEos;
      if (!keep_all) break;
    }
  }
  if (!row.finished && row.generated() >= options.max_new_tokens) {
    row.finished = true;
    row.finish_reason = FinishReason::kLength;
  }
  return appended;
}

// What a cache keeps of each row at a re-layout, before the new paddings are known.
struct CacheKeep {
  int64_t kept;     // content tokens carried over
  int64_t offset;   // from old slot padding + offset
  int64_t claimed;  // what the row will believe the cache holds
};

// The baseline's drafter: proposes nothing, so every round is one plain decoding step.
class NoDrafter final : public Drafter {
 public:
  void start(BatchState&, const DecodeOptions&) override {}
  DraftProposal propose(BatchState&, int64_t, const DecodeOptions&) override { return {}; }
  void select_rows(const at::Tensor&) override {}
  void gather_slots(const at::Tensor&) override {}
  void truncate(int64_t) override {}
  const Transformer* model() const override { return nullptr; }
  const KVCache* cache() const override { return nullptr; }
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
        checker_(target, options) {
    for (const SequenceRequest& request : requests) {
      TORCH_CHECK(!request.prompt.empty(), "eqspec: sequence ", request.sequence_index, " has an empty prompt");
      state_.rows.emplace_back(request, options.sampling.seed);
      state_.width = std::max(state_.width, state_.rows.back().content());
      order_.push_back(request.sequence_index);
    }
    for (size_t i = 0; i < state_.rows.size(); ++i) state_.rows[i].position_padding = state_.padding(i);
    results_.resize(requests.size());
  }

  std::vector<SequenceResult> run() {
    prefill();
    while (!state_.rows.empty()) round();
    return std::move(results_);
  }

 private:
  const FaultSet& faults() const { return options_.faults; }

  void prefill() {
    const int64_t width = state_.width, batch = state_.batch_size();
    target_cache_.emplace(target_.make_cache(batch, width + options_.max_new_tokens + options_.draft_tokens + 2));
    timer_.charge(stats_.other_seconds);
    drafter_.start(state_, options_);
    timer_.charge(stats_.draft_seconds);

    const at::Tensor hidden = target_.forward(tokens_at(state_, 0, width, device_), positions_at(state_, 0, width, device_),
                                              key_valid(state_, width, device_, faults().has(Fault::kMaskLetsPaddingThrough)),
                                              &*target_cache_);
    const at::Tensor logits = target_.logits(hidden.select(1, width - 1));  // [B, V]
    std::vector<int64_t> first(batch);
    if (options_.sampling.greedy()) {
      const at::Tensor argmax = logits.argmax(-1).cpu();
      for (int64_t i = 0; i < batch; ++i) first[i] = argmax[i].item<int64_t>();
    } else {
      const at::Tensor p = sampling_distribution(logits, options_.sampling).cpu();
      for (int64_t i = 0; i < batch; ++i) first[i] = sample_token(p[i], state_.rows[i].rng);
    }
    timer_.charge(stats_.verify_seconds);

    std::vector<int64_t> old_padding(batch);
    std::vector<CacheKeep> target_keep(batch), draft_keep(batch);
    for (int64_t i = 0; i < batch; ++i) {
      Row& row = state_.rows[i];
      old_padding[i] = state_.padding(i);
      row.target_cached = row.content();
      target_keep[i] = {row.content(), 0, row.content()};
      draft_keep[i] = {row.draft_cached, 0, row.draft_cached};
      stats_.generated += static_cast<int64_t>(append_tokens(row, {first[i]}, options_).size());
    }
    relayout(old_padding, target_keep, draft_keep, std::nullopt);
    timer_.charge(stats_.realign_seconds);
    if (options_.check_invariants && !state_.rows.empty()) checker_.check_layout(state_, *target_cache_, drafter_);
  }

  void round() {
    const int64_t k = options_.draft_tokens, width = state_.width, batch = state_.batch_size();
    const DraftProposal proposal =
        k > 0 ? drafter_.propose(state_, k, options_) : DraftProposal{std::vector<std::vector<int64_t>>(batch), {}, {}};
    timer_.charge(stats_.draft_seconds);

    TORCH_CHECK(target_cache_->length() == width - 1, "eqspec: target cache out of step with the batch");
    std::vector<int64_t> flat;
    for (int64_t i = 0; i < batch; ++i) {
      flat.push_back(state_.rows[i].tokens.back());
      flat.insert(flat.end(), proposal.tokens[i].begin(), proposal.tokens[i].end());
    }
    const at::Tensor input = at::tensor(flat, at::TensorOptions().dtype(at::kLong)).view({batch, k + 1}).to(device_);
    at::Tensor positions = positions_at(state_, width - 1, k + 1, device_);
    if (faults().has(Fault::kBonusKvWrongPosition)) positions.select(1, 0).add_(1);
    const at::Tensor valid = key_valid(state_, width + k, device_, faults().has(Fault::kMaskLetsPaddingThrough),
                                       faults().has(Fault::kBonusNotFed) ? width - 1 : -1);
    const at::Tensor logits = target_.logits(target_.forward(input, positions, valid, &*target_cache_));
    const std::vector<RowVerdict> verdicts = verify_drafts(logits, proposal, state_, options_);
    timer_.charge(stats_.verify_seconds);

    std::vector<int64_t> old_padding(batch);
    std::vector<CacheKeep> target_keep(batch), draft_keep(batch);
    std::vector<RoundRecord> records(batch);
    for (int64_t i = 0; i < batch; ++i) {
      Row& row = state_.rows[i];
      const int64_t content = row.content(), a = verdicts[i].accepted;
      old_padding[i] = state_.padding(i);
      records[i] = {row.sequence_index, row.generated(), proposal.tokens[i], verdicts[i].target_choice, a, {}};
      records[i].appended = append_tokens(row, verdicts[i].new_tokens, options_);
      row.accept_lengths.push_back(static_cast<int64_t>(records[i].appended.size()));

      // The target cache holds the old content and every draft; the row keeps content + a.
      const int64_t target_offset = faults().has(Fault::kRejectedKvVisible) ? k - std::min(a, k) : 0;
      target_keep[i] = {content + a, target_offset, content + a};
      // The draft cache holds the old content and drafts 1 .. K-1.
      const int64_t draft_fed = k > 0 ? std::min(a, k - 1) : 0;
      if (faults().has(Fault::kCacheAdvancedByDrafted)) {
        draft_keep[i] = {content + draft_fed, k - 1 - draft_fed, content + a};
      } else if (faults().has(Fault::kDraftCacheShort)) {
        draft_keep[i] = {content + draft_fed, 0, content + a};
      } else {
        draft_keep[i] = {content + draft_fed, 0, content + draft_fed};
      }
      stats_.accepted += a;
      stats_.generated += static_cast<int64_t>(records[i].appended.size());
      stats_.round_tokens += static_cast<int64_t>(records[i].appended.size());
    }
    stats_.rounds += 1;
    stats_.row_rounds += batch;
    stats_.drafted += batch * k;
    timer_.charge(stats_.other_seconds);

    const std::optional<int64_t> inflated =
        faults().has(Fault::kPaddingNeverRemoved) ? std::optional<int64_t>(width + k + 1) : std::nullopt;
    relayout(old_padding, target_keep, draft_keep, inflated);
    timer_.charge(stats_.realign_seconds);
    if (options_.check_invariants) {
      checker_.check_round(records);
      if (!state_.rows.empty()) checker_.check_layout(state_, *target_cache_, drafter_);
    }
  }

  // Unpad-append-repad: finished rows leave, the rest are re-padded to the new minimal width
  // (or `inflated_width`), and both caches follow with one gather per layer.
  void relayout(const std::vector<int64_t>& old_padding, const std::vector<CacheKeep>& target_keep,
                const std::vector<CacheKeep>& draft_keep, std::optional<int64_t> inflated_width) {
    std::vector<int64_t> kept_rows;
    int64_t new_width = 0;
    for (size_t i = 0; i < state_.rows.size(); ++i) {
      Row& row = state_.rows[i];
      if (row.finished) {
        const auto position = std::find(order_.begin(), order_.end(), row.sequence_index) - order_.begin();
        results_[position] = {row.sequence_index,
                              std::vector<int64_t>(row.tokens.begin() + row.prompt_length, row.tokens.end()),
                              row.finish_reason, static_cast<int64_t>(row.accept_lengths.size()), row.accept_lengths};
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
      if (drafter_.model() != nullptr) drafter_.select_rows(index);
    }
    move_cache(target_moves, new_width, target_cache_->length(),
               [&](const at::Tensor& map) { target_cache_->gather_slots(map); },
               [&](int64_t length) { target_cache_->truncate(length); });
    if (drafter_.model() != nullptr) {
      move_cache(draft_moves, new_width, drafter_.cache()->length(),
                 [&](const at::Tensor& map) { drafter_.gather_slots(map); }, [&](int64_t length) { drafter_.truncate(length); });
    }
    state_.rows = std::move(rows);
    state_.width = new_width;
  }

  // Rows that stay where they are (every row grew by the same amount) need no copy at all.
  template <typename Gather, typename Truncate>
  void move_cache(const std::vector<RowMove>& moves, int64_t new_width, int64_t cache_length, Gather gather,
                  Truncate truncate) {
    const bool in_place = new_width - 1 <= cache_length && std::all_of(moves.begin(), moves.end(), [](const RowMove& m) {
                            return m.old_padding + m.offset == m.new_padding;
                          });
    if (in_place) {
      truncate(new_width - 1);
    } else {
      gather(slot_map(moves, new_width - 1, device_));
    }
  }

  const Transformer& target_;
  Drafter& drafter_;
  const DecodeOptions& options_;
  DecodeStats& stats_;
  c10::Device device_;
  PhaseTimer timer_;
  InvariantChecker checker_;
  BatchState state_;
  std::optional<KVCache> target_cache_;
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
