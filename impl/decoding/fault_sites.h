#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <ATen/core/Tensor.h>

#include "impl/decoding/batch_scheduler.h"
#include "impl/decoding/batch_state.h"
#include "impl/decoding/faults.h"
#include "impl/decoding/token_tree.h"
#include "impl/model/kv_cache.h"
#include "impl/sampling/sampling.h"

namespace specgate {

// Every place a seeded fault bends a decoder. The decoders compute what is right and pass it
// through these; each returns its first argument unless its fault is on, so a build without
// faults (SPECGATE_FAULTS=OFF) decodes exactly as one with none switched on.

// ---- Passes (target and draft)

// The key mask: every slot valid (kMaskLetsPaddingThrough); the pending token's `fed_slot`
// hidden from every row (kBonusNotFed), when given.
at::Tensor mask_under_faults(at::Tensor key_valid, const FaultSet& faults, int64_t fed_slot = -1);

// The positions of a verification pass: the pending token's one further on (kBonusKvWrongPosition).
at::Tensor verified_positions_under_faults(at::Tensor positions, const FaultSet& faults);

// ---- Sampling

// The distribution each row draws from (sampling_distribution): with top-k, top-p and min-p cut
// on the untempered distribution and the temperature applied to what they keep
// (kWarpersBeforeTemperature).
at::Tensor sampling_distribution_under_faults(const at::Tensor& logits, std::span<const SamplingParams> sampling,
                                              const FaultSet& faults);

// ---- Drafting

// The draft distribution verification takes as q, given the `shaped` one the draft was drawn
// from with each row's `sampling`: the unshaped softmax (kRawDraftDistribution), or the tempered
// one without top-k, top-p and min-p (kDraftFilterSkipped).
at::Tensor recorded_distribution_under_faults(at::Tensor shaped, const at::Tensor& logits,
                                              std::span<const SamplingParams> sampling, const FaultSet& faults);

// kStaleDraftDistribution: the first round's draft distributions, recorded once and handed back
// in every later round that they fit.
class StaleDraftDistributions {
 public:
  at::Tensor under_faults(at::Tensor fresh, const FaultSet& faults);

 private:
  at::Tensor first_;
};

// ---- Verification

// Whether verification compares drafts with the target's argmax (kGreedyVerification).
bool greedy_under_faults(bool greedy, const FaultSet& faults);

// Whose random stream batch row `row` draws from: the first row's (kSharedRandomStream).
size_t stream_row_under_faults(size_t row, const FaultSet& faults);

// Each draft's test u q(d) < p(d), passed by every draft (kAlwaysAccept).
at::Tensor draft_tests_under_faults(at::Tensor passed, const FaultSet& faults);

// The drafts a row keeps, `leading` passes of `passed` [B, K]: every pass counted, after a
// failure too (kCountAfterMismatch).
at::Tensor accepted_count_under_faults(at::Tensor leading, const at::Tensor& passed, const FaultSet& faults);

// How many drafts of each row (lengths [B]) verification tests: the batch's longest, k, for
// every row (kRaggedPaddingVerified).
at::Tensor verified_lengths_under_faults(at::Tensor lengths, int64_t k, const FaultSet& faults);

// The column of the target's choices the greedy bonus is read from: one further
// (kBonusLogitOffByOne); after the padding, column k, for a row that kept all its drafts
// and had fewer than k (kRaggedBonusFromPadding).
at::Tensor bonus_column_under_faults(at::Tensor column, int64_t k, const at::Tensor& lengths, const FaultSet& faults);

// The greedy bonus: the rejected draft itself (kBonusFromDraft).
at::Tensor greedy_bonus_under_faults(at::Tensor bonus, const at::Tensor& drafts, const at::Tensor& accepted,
                                     const FaultSet& faults);

// What a rejected row's bonus is drawn from, max(0, p - q): q itself (kBonusFromDraft).
at::Tensor residual_under_faults(at::Tensor residual, const at::Tensor& q, const FaultSet& faults);

// The uniform of a draw from the residual weights: scaled by their mass, as if they summed to
// one (kResidualNotNormalised).
at::Tensor residual_uniform_under_faults(at::Tensor u, const at::Tensor& weights, const at::Tensor& from_residual,
                                         const FaultSet& faults);

// ---- Acceptance and the layout that follows

// How many of a round's `tokens` a row keeps, `kept` (up to its first EOS, within
// max_new_tokens): all of them (kTokensAfterEosKept).
size_t kept_tokens_under_faults(size_t kept, size_t tokens, const FaultSet& faults);

// The target cache slots a row keeps after `accepted` of `k` drafts: ending on the last draft,
// rejected ones included (kRejectedKvVisible).
RowSlots target_kept_under_faults(RowSlots kept, int64_t accepted, int64_t k, const FaultSet& faults);

// The draft cache slots a row keeps, `kept` after `fed` of the K - 1 drafts fed: taken to hold
// all `accepted` drafts, as if the last one had been fed, ending on the last draft fed
// (kCacheAdvancedByDrafted) or where the kept ones end (kDraftCacheShort).
RowSlots draft_kept_under_faults(RowSlots kept, int64_t fed, int64_t accepted, int64_t k, const FaultSet& faults);

// The width rows are re-padded to: K + 1 slots more than `old_width`, every round
// (kPaddingNeverRemoved).
int64_t realigned_width_under_faults(int64_t width, int64_t old_width, int64_t k, const FaultSet& faults);

// The padding a re-laid row computes its positions with: the one it had (kStalePositionIds).
int64_t position_padding_under_faults(int64_t padding, int64_t held, const FaultSet& faults);

// Where a target cache run bound for slot `to_first` is read from: the slots it should land in,
// as if it had never moved (kKvNotShifted).
SlotRun source_under_faults(SlotRun run, int64_t to_first, const FaultSet& faults);

// ---- Cancellation

// Whether the rows after a cancelled one move up a batch row, each then reading the K/V of the
// row before it (kCancelShiftsRows), where they should keep their own.
bool rows_shift_on_cancel_under_faults(const FaultSet& faults);

// ---- Token trees

// What each offset of a tree pass sees: the sibling before it too, where it has one
// (kTreeSiblingVisible).
at::Tensor tree_visibility_under_faults(at::Tensor visibility, const TreeShape& shape, const FaultSet& faults);

// The position offsets of a tree pass: each offset's place in the pass instead of its depth
// (kTreePositionByOffset).
std::vector<int64_t> tree_offsets_under_faults(std::vector<int64_t> depths, const FaultSet& faults);

// The node whose K/V moves into kept node `node`'s place on the path: its first sibling
// (kTreeWrongBranchKv); none, the path's K/V left where the pass wrote them (kTreePathNotCompacted).
std::optional<int64_t> kept_kv_under_faults(int64_t node, const TreeShape& shape, const FaultSet& faults);

// The probability mass left at a node after its rejected children: 1 whatever was rejected
// (kTreeSiblingNotRenormalised).
double sibling_mass_under_faults(double left, const FaultSet& faults);

// Whether the bonus after rejected siblings is drawn with their tokens still in the target's
// distribution (kTreeRejectedSiblingKept).
bool rejected_siblings_kept_under_faults(const FaultSet& faults);

// ---- EXSPEC's pool and scheduling

// The scheduler's choice: the longest waiting sequences, called a group whatever their lengths
// (kGroupMixedLengths).
BatchChoice batch_under_faults(BatchChoice choice, std::span<const WindowEntry> window, int64_t batch_size,
                               const FaultSet& faults);

// A batch row's padding in a grouped batch: none, its K/V unpadded (kGroupMixedLengths).
int64_t group_padding_under_faults(int64_t padding, bool grouped, const FaultSet& faults);

// The pool slots runs are written to: each run into the next one's (kWrongSequenceKv).
std::vector<int64_t> pool_slots_under_faults(std::vector<int64_t> slots, const FaultSet& faults);

// kRefillLosesSequence, kRefillDuplicatesSequence: once the window is refilled, one sequence
// is admitted no times, or twice.
class RefillFaults {
 public:
  void window_started() { refilling_ = true; }
  // How many times an admitted sequence enters the queue, with `free_places` left for it.
  int copies_under_faults(int64_t free_places, const FaultSet& faults);

 private:
  bool refilling_ = false;
  bool committed_ = false;
};

}  // namespace specgate
