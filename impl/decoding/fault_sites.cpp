#include "impl/decoding/fault_sites.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <ATen/ATen.h>

namespace specgate {

at::Tensor mask_under_faults(at::Tensor key_valid, const FaultSet& faults, int64_t fed_slot) {
  if (faults.has(Fault::kMaskLetsPaddingThrough)) key_valid = at::ones_like(key_valid);
  if (faults.has(Fault::kBonusNotFed) && fed_slot >= 0 && fed_slot < key_valid.size(1)) {
    key_valid = key_valid.clone();
    key_valid.select(1, fed_slot).fill_(false);
  }
  return key_valid;
}

at::Tensor verified_positions_under_faults(at::Tensor positions, const FaultSet& faults) {
  if (faults.has(Fault::kBonusKvWrongPosition)) positions.select(1, 0).add_(1);
  return positions;
}

at::Tensor sampling_distribution_under_faults(const at::Tensor& logits, std::span<const SamplingParams> sampling,
                                              const FaultSet& faults) {
  if (!faults.has(Fault::kWarpersBeforeTemperature)) return sampling_distribution(logits, sampling);
  std::vector<SamplingParams> untempered(sampling.begin(), sampling.end()), tempered;
  for (SamplingParams& row : untempered) {
    tempered.push_back({.temperature = row.temperature});
    if (!row.greedy()) row.temperature = 1.0;
  }
  const at::Tensor cut = sampling_distribution(logits, untempered).eq(0.0);
  return sampling_distribution(logits.to(at::kDouble).masked_fill(cut, -INFINITY), tempered);
}

at::Tensor recorded_distribution_under_faults(at::Tensor shaped, const at::Tensor& logits,
                                              std::span<const SamplingParams> sampling, const FaultSet& faults) {
  if (faults.has(Fault::kRawDraftDistribution)) return logits.to(at::kDouble).softmax(-1);
  if (faults.has(Fault::kDraftFilterSkipped)) {
    std::vector<SamplingParams> tempered;
    for (const SamplingParams& row : sampling) tempered.push_back({.temperature = row.temperature});
    return sampling_distribution(logits, tempered);
  }
  return shaped;
}

at::Tensor StaleDraftDistributions::under_faults(at::Tensor fresh, const FaultSet& faults) {
  if (!faults.has(Fault::kStaleDraftDistribution)) return fresh;
  const bool fits = first_.defined() && first_.size(0) >= fresh.size(0) && first_.size(1) == fresh.size(1);
  if (!fits) {
    first_ = fresh;
    return fresh;
  }
  return first_.narrow(0, 0, fresh.size(0));
}

bool greedy_under_faults(bool greedy, const FaultSet& faults) {
  return greedy || faults.has(Fault::kGreedyVerification);
}

size_t stream_row_under_faults(size_t row, const FaultSet& faults) {
  return faults.has(Fault::kSharedRandomStream) ? 0 : row;
}

at::Tensor draft_tests_under_faults(at::Tensor passed, const FaultSet& faults) {
  if (faults.has(Fault::kAlwaysAccept)) return at::ones_like(passed);
  return passed;
}

at::Tensor accepted_count_under_faults(at::Tensor leading, const at::Tensor& passed, const FaultSet& faults) {
  if (faults.has(Fault::kCountAfterMismatch)) return passed.sum(1);
  return leading;
}

at::Tensor verified_lengths_under_faults(at::Tensor lengths, int64_t k, const FaultSet& faults) {
  if (faults.has(Fault::kRaggedPaddingVerified)) return at::full_like(lengths, k);
  return lengths;
}

at::Tensor bonus_column_under_faults(at::Tensor column, int64_t k, const at::Tensor& lengths, const FaultSet& faults) {
  if (faults.has(Fault::kBonusLogitOffByOne)) return (column + 1).clamp_max(k);
  if (faults.has(Fault::kRaggedBonusFromPadding)) return at::where(column.eq(lengths), at::full_like(column, k), column);
  return column;
}

at::Tensor greedy_bonus_under_faults(at::Tensor bonus, const at::Tensor& drafts, const at::Tensor& accepted,
                                     const FaultSet& faults) {
  const int64_t k = drafts.size(1);
  if (!faults.has(Fault::kBonusFromDraft) || k == 0) return bonus;
  const at::Tensor draft = drafts.gather(1, accepted.clamp_max(k - 1).unsqueeze(1)).squeeze(1);
  return at::where(accepted.lt(k), draft, bonus);
}

at::Tensor residual_under_faults(at::Tensor residual, const at::Tensor& q, const FaultSet& faults) {
  if (faults.has(Fault::kBonusFromDraft)) return q;
  return residual;
}

at::Tensor residual_uniform_under_faults(at::Tensor u, const at::Tensor& weights, const at::Tensor& from_residual,
                                         const FaultSet& faults) {
  if (!faults.has(Fault::kResidualNotNormalised)) return u;
  return at::where(from_residual, u / weights.sum(-1), u);
}

size_t kept_tokens_under_faults(size_t kept, size_t tokens, const FaultSet& faults) {
  return faults.has(Fault::kTokensAfterEosKept) ? tokens : kept;
}

RowSlots target_kept_under_faults(RowSlots kept, int64_t accepted, int64_t k, const FaultSet& faults) {
  if (faults.has(Fault::kRejectedKvVisible)) kept.first += k - accepted;
  return kept;
}

RowSlots draft_kept_under_faults(RowSlots kept, int64_t fed, int64_t accepted, int64_t k, const FaultSet& faults) {
  if (faults.has(Fault::kCacheAdvancedByDrafted)) kept.first += k - 1 - fed;
  if (faults.has(Fault::kCacheAdvancedByDrafted) || faults.has(Fault::kDraftCacheShort)) kept.count += accepted - fed;
  return kept;
}

int64_t realigned_width_under_faults(int64_t width, int64_t old_width, int64_t k, const FaultSet& faults) {
  if (faults.has(Fault::kPaddingNeverRemoved)) return std::max(width, old_width + k + 1);
  return width;
}

int64_t position_padding_under_faults(int64_t padding, int64_t held, const FaultSet& faults) {
  return faults.has(Fault::kStalePositionIds) ? held : padding;
}

bool rows_shift_on_cancel_under_faults(const FaultSet& faults) { return faults.has(Fault::kCancelShiftsRows); }

SlotRun source_under_faults(SlotRun run, int64_t to_first, const FaultSet& faults) {
  if (faults.has(Fault::kKvNotShifted)) run.first = to_first;
  return run;
}

BatchChoice batch_under_faults(BatchChoice choice, std::span<const WindowEntry> window, int64_t batch_size,
                               const FaultSet& faults) {
  if (!faults.has(Fault::kGroupMixedLengths)) return choice;
  std::vector<size_t> longest_waiting = by_priority(window);
  longest_waiting.resize(std::min(longest_waiting.size(), static_cast<size_t>(batch_size)));
  return {longest_waiting, true};
}

int64_t group_padding_under_faults(int64_t padding, bool grouped, const FaultSet& faults) {
  return grouped && faults.has(Fault::kGroupMixedLengths) ? 0 : padding;
}

std::vector<int64_t> pool_slots_under_faults(std::vector<int64_t> slots, const FaultSet& faults) {
  if (faults.has(Fault::kWrongSequenceKv) && !slots.empty()) std::rotate(slots.begin(), slots.begin() + 1, slots.end());
  return slots;
}

int RefillFaults::copies_under_faults(int64_t free_places, const FaultSet& faults) {
  if (!refilling_ || committed_) return 1;
  if (faults.has(Fault::kRefillLosesSequence)) {
    committed_ = true;
    return 0;
  }
  if (faults.has(Fault::kRefillDuplicatesSequence) && free_places > 1) {
    committed_ = true;
    return 2;
  }
  return 1;
}

at::Tensor tree_visibility_under_faults(at::Tensor visibility, const TreeShape& shape, const FaultSet& faults) {
  if (!faults.has(Fault::kTreeSiblingVisible)) return visibility;
  for (int64_t node = 0; node < shape.size(); ++node) {
    const std::vector<int64_t>& siblings = shape.children(shape.parent(node));
    const auto at = std::find(siblings.begin(), siblings.end(), node);
    if (at != siblings.begin()) visibility[node + 1][*(at - 1) + 1] = true;
  }
  return visibility;
}

std::vector<int64_t> tree_offsets_under_faults(std::vector<int64_t> depths, const FaultSet& faults) {
  if (faults.has(Fault::kTreePositionByOffset)) {
    for (size_t offset = 0; offset < depths.size(); ++offset) depths[offset] = static_cast<int64_t>(offset);
  }
  return depths;
}

std::optional<int64_t> kept_kv_under_faults(int64_t node, const TreeShape& shape, const FaultSet& faults) {
  if (faults.has(Fault::kTreePathNotCompacted)) return std::nullopt;
  if (faults.has(Fault::kTreeWrongBranchKv)) return shape.children(shape.parent(node)).front();
  return node;
}

double sibling_mass_under_faults(double left, const FaultSet& faults) {
  return faults.has(Fault::kTreeSiblingNotRenormalised) ? 1.0 : left;
}

bool rejected_siblings_kept_under_faults(const FaultSet& faults) { return faults.has(Fault::kTreeRejectedSiblingKept); }

}  // namespace specgate
