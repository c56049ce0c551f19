#include "impl/decoding/speculative_step.h"

#include <algorithm>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/decoding/acceptance.h"
#include "impl/decoding/batch_tensors.h"
#include "impl/model/kv_cache.h"
#include "impl/model/transformer.h"

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
    if (!keep_all && row.generated() == row.max_new_tokens) break;
    row.tokens.push_back(token);
    appended.push_back(token);
    if (is_eos(options, token) && !row.finished) {
      row.finished = true;
      row.finish_reason = FinishReason::kEos;
      if (!keep_all) break;
    }
  }
  if (!row.finished && row.generated() >= row.max_new_tokens) {
    row.finished = true;
    row.finish_reason = FinishReason::kLength;
  }
  return appended;
}

}  // namespace

StepOutcome SpeculativeStep::prefill(BatchState& state, KVCache& target_cache, KVCache* draft_cache) {
  const int64_t width = state.width, batch = state.batch_size();
  const c10::Device device = target_.options().device();
  const bool let_padding = options_.faults.has(Fault::kMaskLetsPaddingThrough);
  timer_.charge(stats_.other_seconds);
  drafter_.start(state, options_, draft_cache);
  timer_.charge(stats_.draft_seconds);

  const at::Tensor hidden = target_.forward(tokens_at(state, 0, width, device), positions_at(state, 0, width, device),
                                            key_valid(state, width, device, let_padding), &target_cache);
  const at::Tensor logits = target_.logits(hidden.select(1, width - 1));  // [B, V]
  std::vector<int64_t> first(batch);
  if (options_.sampling.greedy()) {
    const at::Tensor argmax = logits.argmax(-1).cpu();
    for (int64_t i = 0; i < batch; ++i) first[i] = argmax[i].item<int64_t>();
  } else {
    const at::Tensor p = sampling_distribution(logits, options_.sampling).cpu();
    for (int64_t i = 0; i < batch; ++i) first[i] = sample_token(p[i], state.rows[i].rng);
  }
  timer_.charge(stats_.verify_seconds);

  StepOutcome outcome;
  for (int64_t i = 0; i < batch; ++i) {
    Row& row = state.rows[i];
    outcome.old_padding.push_back(state.padding(i));
    row.target_cached = row.content();
    outcome.target_keep.push_back({row.content(), 0, row.content()});
    outcome.draft_keep.push_back({row.draft_cached, 0, row.draft_cached});
    stats_.generated += static_cast<int64_t>(append_tokens(row, {first[i]}, options_).size());
  }
  return outcome;
}

StepOutcome SpeculativeStep::round(BatchState& state, KVCache& target_cache, KVCache* draft_cache) {
  const int64_t k = options_.draft_tokens, width = state.width, batch = state.batch_size();
  const c10::Device device = target_.options().device();
  const FaultSet& faults = options_.faults;
  const DraftProposal proposal = k > 0 ? drafter_.propose(state, k, options_, draft_cache)
                                       : DraftProposal{std::vector<std::vector<int64_t>>(batch), {}, {}};
  timer_.charge(stats_.draft_seconds);

  TORCH_CHECK(target_cache.length() == width - 1, "speculative step: target cache out of step with the batch");
  std::vector<int64_t> flat;
  for (int64_t i = 0; i < batch; ++i) {
    flat.push_back(state.rows[i].tokens.back());
    flat.insert(flat.end(), proposal.tokens[i].begin(), proposal.tokens[i].end());
  }
  const at::Tensor input = at::tensor(flat, at::TensorOptions().dtype(at::kLong)).view({batch, k + 1}).to(device);
  at::Tensor positions = positions_at(state, width - 1, k + 1, device);
  if (faults.has(Fault::kBonusKvWrongPosition)) positions.select(1, 0).add_(1);
  const at::Tensor valid = key_valid(state, width + k, device, faults.has(Fault::kMaskLetsPaddingThrough),
                                     faults.has(Fault::kBonusNotFed) ? width - 1 : -1);
  const at::Tensor logits = target_.logits(target_.forward(input, positions, valid, &target_cache));
  const std::vector<RowVerdict> verdicts = verify_drafts(logits, proposal, state, options_);
  timer_.charge(stats_.verify_seconds);

  StepOutcome outcome;
  for (int64_t i = 0; i < batch; ++i) {
    Row& row = state.rows[i];
    const int64_t content = row.content(), a = verdicts[i].accepted;
    outcome.old_padding.push_back(state.padding(i));
    RoundRecord& record = outcome.records.emplace_back(
        RoundRecord{row.sequence_index, row.generated(), row.max_new_tokens, proposal.tokens[i], verdicts[i].target_choice, a, {}});
    record.appended = append_tokens(row, verdicts[i].new_tokens, options_);
    row.accept_lengths.push_back(static_cast<int64_t>(record.appended.size()));

    // The target cache holds the old content and every draft; the row keeps content + a.
    const int64_t target_offset = faults.has(Fault::kRejectedKvVisible) ? k - std::min(a, k) : 0;
    outcome.target_keep.push_back({content + a, target_offset, content + a});
    // The draft cache holds the old content and drafts 1 .. K-1.
    const int64_t draft_fed = k > 0 ? std::min(a, k - 1) : 0;
    if (faults.has(Fault::kCacheAdvancedByDrafted)) {
      outcome.draft_keep.push_back({content + draft_fed, k - 1 - draft_fed, content + a});
    } else if (faults.has(Fault::kDraftCacheShort)) {
      outcome.draft_keep.push_back({content + draft_fed, 0, content + a});
    } else {
      outcome.draft_keep.push_back({content + draft_fed, 0, content + draft_fed});
    }
    stats_.accepted += a;
    stats_.generated += static_cast<int64_t>(record.appended.size());
    stats_.round_tokens += static_cast<int64_t>(record.appended.size());
  }
  stats_.rounds += 1;
  stats_.row_rounds += batch;
  stats_.drafted += batch * k;
  timer_.charge(stats_.other_seconds);
  return outcome;
}

SequenceResult finish_row(Row& row, int64_t step, DecodeStats& stats) {
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - row.admitted_at;
  stats.latencies.push_back({row.sequence_index, step - row.admitted_step, elapsed.count()});
  return {row.sequence_index, std::vector<int64_t>(row.tokens.begin() + row.prompt_length, row.tokens.end()),
          row.finish_reason, static_cast<int64_t>(row.accept_lengths.size()), std::move(row.accept_lengths)};
}

}  // namespace specgate
