// The fault module alone: every site hands back what it is given unless one of its own faults
// is on, and each fault bends its site as faults.h describes, on hand-built inputs.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "impl/decoding/fault_sites.h"
#include "impl/tests/tensor_test_support.h"

namespace specgate {
namespace {

using test_support::kLong;
using test_support::kDouble;

bool same(const SlotRun& a, const SlotRun& b) { return a.row == b.row && a.first == b.first && a.count == b.count; }
bool same(const RowSlots& a, const RowSlots& b) { return a.first == b.first && a.count == b.count; }
bool same(const at::Tensor& a, const at::Tensor& b) { return a.sizes() == b.sizes() && a.equal(b); }

// One site: the faults that may bend it, and whether it bent its hand-built input under `faults`.
struct Site {
  std::string name;
  std::vector<Fault> own;
  std::function<bool(const FaultSet&)> bent;
};

std::vector<Site> sites() {
  const at::Tensor valid = at::tensor({0, 1, 1, 1}, kLong).to(at::kBool).view({1, 4});
  const at::Tensor positions = at::tensor({3, 4, 5}, kLong).view({1, 3});
  const at::Tensor logits = at::tensor({2.0, 1.0, 0.0, -1.0}, kDouble).view({1, 4});
  const SamplingParams top2{.temperature = 0.5, .top_k = 2};
  const at::Tensor shaped = sampling_distribution(logits, top2);
  const at::Tensor passed = at::tensor({1, 0, 1}, kLong).to(at::kBool).view({1, 3});
  const at::Tensor drafts = at::tensor({7, 8, 9}, kLong).view({1, 3});
  const at::Tensor accepted = at::tensor({1}, kLong);
  const at::Tensor lengths = at::tensor({1}, kLong);  // a row that kept its one draft of three
  const TreeShape star({-1, -1, -1});
  const at::Tensor p = at::tensor({0.5, 0.5, 0.0}, kDouble).view({1, 3});
  const at::Tensor q = at::tensor({0.25, 0.25, 0.5}, kDouble).view({1, 3});
  const at::Tensor r = (p - q).clamp_min(0.0);
  const at::Tensor u = at::tensor({0.2}, kDouble);
  const at::Tensor from_residual = at::tensor({1}, kLong).to(at::kBool);
  const std::vector<WindowEntry> window = {{5, 0}, {7, 3}, {5, 1}};
  const BatchChoice grouped{{0, 2}, true};
  return {
      {"mask_under_faults", {Fault::kMaskLetsPaddingThrough, Fault::kBonusNotFed},
       [=](const FaultSet& f) { return !same(mask_under_faults(valid, f, 3), valid); }},
      {"verified_positions_under_faults", {Fault::kBonusKvWrongPosition},
       [=](const FaultSet& f) { return !same(verified_positions_under_faults(positions.clone(), f), positions); }},
      {"sampling_distribution_under_faults", {Fault::kWarpersBeforeTemperature},
       [=](const FaultSet& f) {
         const SamplingParams nucleus{.temperature = 0.5, .top_p = 0.7};
         return !same(sampling_distribution_under_faults(logits, std::span(&nucleus, 1), f),
                      sampling_distribution(logits, nucleus));
       }},
      {"recorded_distribution_under_faults", {Fault::kRawDraftDistribution, Fault::kDraftFilterSkipped},
       [=](const FaultSet& f) { return !same(recorded_distribution_under_faults(shaped, logits, std::span(&top2, 1), f), shaped); }},
      {"StaleDraftDistributions", {Fault::kStaleDraftDistribution},
       [=](const FaultSet& f) {
         StaleDraftDistributions stale;
         stale.under_faults(q.unsqueeze(1), f);
         return !same(stale.under_faults(p.unsqueeze(1), f), p.unsqueeze(1));
       }},
      {"greedy_under_faults", {Fault::kGreedyVerification},
       [](const FaultSet& f) { return greedy_under_faults(false, f); }},
      {"stream_row_under_faults", {Fault::kSharedRandomStream},
       [](const FaultSet& f) { return stream_row_under_faults(2, f) != 2; }},
      {"draft_tests_under_faults", {Fault::kAlwaysAccept},
       [=](const FaultSet& f) { return !same(draft_tests_under_faults(passed, f), passed); }},
      {"accepted_count_under_faults", {Fault::kCountAfterMismatch},
       [=](const FaultSet& f) { return accepted_count_under_faults(at::tensor({1}, kLong), passed, f).item<int64_t>() != 1; }},
      {"verified_lengths_under_faults", {Fault::kRaggedPaddingVerified},
       [=](const FaultSet& f) { return !same(verified_lengths_under_faults(lengths, 3, f), lengths); }},
      {"bonus_column_under_faults", {Fault::kBonusLogitOffByOne, Fault::kRaggedBonusFromPadding},
       [=](const FaultSet& f) { return !same(bonus_column_under_faults(accepted, 3, lengths, f), accepted); }},
      {"greedy_bonus_under_faults", {Fault::kBonusFromDraft},
       [=](const FaultSet& f) {
         const at::Tensor bonus = at::tensor({4}, kLong);
         return !same(greedy_bonus_under_faults(bonus, drafts, accepted, f), bonus);
       }},
      {"residual_under_faults", {Fault::kBonusFromDraft},
       [=](const FaultSet& f) { return !same(residual_under_faults(r, q, f), r); }},
      {"residual_uniform_under_faults", {Fault::kResidualNotNormalised},
       [=](const FaultSet& f) { return !same(residual_uniform_under_faults(u, r, from_residual, f), u); }},
      {"kept_tokens_under_faults", {Fault::kTokensAfterEosKept},
       [](const FaultSet& f) { return kept_tokens_under_faults(2, 4, f) != 2; }},
      {"target_kept_under_faults", {Fault::kRejectedKvVisible},
       [](const FaultSet& f) { return !same(target_kept_under_faults({1, 6}, 1, 3, f), {1, 6}); }},
      {"draft_kept_under_faults", {Fault::kCacheAdvancedByDrafted, Fault::kDraftCacheShort},
       [](const FaultSet& f) { return !same(draft_kept_under_faults({1, 7}, 2, 3, 3, f), {1, 7}); }},
      {"realigned_width_under_faults", {Fault::kPaddingNeverRemoved},
       [](const FaultSet& f) { return realigned_width_under_faults(9, 8, 3, f) != 9; }},
      {"position_padding_under_faults", {Fault::kStalePositionIds},
       [](const FaultSet& f) { return position_padding_under_faults(2, 5, f) != 2; }},
      {"source_under_faults", {Fault::kKvNotShifted},
       [](const FaultSet& f) { return !same(source_under_faults({1, 4, 6}, 2, f), {1, 4, 6}); }},
      {"rows_shift_on_cancel_under_faults", {Fault::kCancelShiftsRows},
       [](const FaultSet& f) { return rows_shift_on_cancel_under_faults(f); }},
      {"batch_under_faults", {Fault::kGroupMixedLengths},
       [=](const FaultSet& f) { return batch_under_faults(grouped, window, 2, f).members != grouped.members; }},
      {"group_padding_under_faults", {Fault::kGroupMixedLengths},
       [](const FaultSet& f) { return group_padding_under_faults(2, true, f) != 2; }},
      {"tree_visibility_under_faults", {Fault::kTreeSiblingVisible},
       [=](const FaultSet& f) { return !same(tree_visibility_under_faults(star.visibility(), star, f), star.visibility()); }},
      {"tree_offsets_under_faults", {Fault::kTreePositionByOffset},
       [=](const FaultSet& f) { return tree_offsets_under_faults(star.depth_offsets(), f) != star.depth_offsets(); }},
      {"kept_kv_under_faults", {Fault::kTreePathNotCompacted, Fault::kTreeWrongBranchKv},
       [=](const FaultSet& f) { return kept_kv_under_faults(2, star, f) != std::optional<int64_t>(2); }},
      {"sibling_mass_under_faults", {Fault::kTreeSiblingNotRenormalised},
       [](const FaultSet& f) { return sibling_mass_under_faults(0.25, f) != 0.25; }},
      {"rejected_siblings_kept_under_faults", {Fault::kTreeRejectedSiblingKept},
       [](const FaultSet& f) { return rejected_siblings_kept_under_faults(f); }},
      {"pool_slots_under_faults", {Fault::kWrongSequenceKv},
       [](const FaultSet& f) { return pool_slots_under_faults({3, 1, 4}, f) != std::vector<int64_t>{3, 1, 4}; }},
      {"RefillFaults", {Fault::kRefillLosesSequence, Fault::kRefillDuplicatesSequence},
       [](const FaultSet& f) {
         RefillFaults refill;
         const int before = refill.copies_under_faults(4, f);
         refill.window_started();
         return before != 1 || refill.copies_under_faults(4, f) != 1;
       }},
  };
}

bool owns(const Site& site, Fault fault) { return std::find(site.own.begin(), site.own.end(), fault) != site.own.end(); }

TEST(FaultSites, EachSiteBendsUnderItsOwnFaultsAndNoOther) {
  for (const Site& site : sites()) {
    EXPECT_FALSE(site.bent(FaultSet())) << site.name << " bends with no fault on";
    FaultSet others;
    for (Fault fault : all_faults()) {
      if (!owns(site, fault)) others.add(fault);
    }
    EXPECT_FALSE(site.bent(others)) << site.name << " bends under another site's fault";
    for (Fault fault : site.own) EXPECT_TRUE(site.bent(FaultSet().add(fault))) << site.name << " under " << fault_name(fault);
  }
}

TEST(FaultSites, EveryFaultHasASite) {
  for (Fault fault : all_faults()) {
    bool found = false;
    for (const Site& site : sites()) found = found || owns(site, fault);
    EXPECT_TRUE(found) << fault_name(fault);
  }
}

TEST(FaultSites, EachFaultBendsItsSiteAsDescribed) {
  const FaultSet none;
  auto with = [](Fault fault) { return FaultSet().add(fault); };
  const at::Tensor valid = at::tensor({0, 1, 1, 1}, kLong).to(at::kBool).view({1, 4});
  EXPECT_TRUE(same(mask_under_faults(valid, with(Fault::kMaskLetsPaddingThrough)), at::ones_like(valid)));
  EXPECT_TRUE(same(mask_under_faults(valid, with(Fault::kBonusNotFed), 3),
                   at::tensor({0, 1, 1, 0}, kLong).to(at::kBool).view({1, 4})));
  EXPECT_TRUE(same(verified_positions_under_faults(at::tensor({3, 4, 5}, kLong).view({1, 3}), with(Fault::kBonusKvWrongPosition)),
                   at::tensor({4, 4, 5}, kLong).view({1, 3})))
      << "the pending token one position further, the drafts where they were";

  const at::Tensor passed = at::tensor({1, 0, 1}, kLong).to(at::kBool).view({1, 3});
  EXPECT_EQ(accepted_count_under_faults(at::tensor({1}, kLong), passed, with(Fault::kCountAfterMismatch)).item<int64_t>(), 2);
  EXPECT_EQ(bonus_column_under_faults(at::tensor({3}, kLong), 3, at::tensor({3}, kLong), with(Fault::kBonusLogitOffByOne))
                .item<int64_t>(),
            3)
      << "never past the last column";
  EXPECT_EQ(greedy_bonus_under_faults(at::tensor({4}, kLong), at::tensor({7, 8, 9}, kLong).view({1, 3}),
                                      at::tensor({1}, kLong), with(Fault::kBonusFromDraft))
                .item<int64_t>(),
            8)
      << "the rejected draft";
  EXPECT_EQ(greedy_bonus_under_faults(at::tensor({4}, kLong), at::tensor({7, 8, 9}, kLong).view({1, 3}),
                                      at::tensor({3}, kLong), with(Fault::kBonusFromDraft))
                .item<int64_t>(),
            4)
      << "a row that kept every draft has no rejected draft to take";
  const at::Tensor u = at::tensor({0.2}, kDouble);
  const at::Tensor weights = at::tensor({0.25, 0.25, 0.0}, kDouble).view({1, 3});
  EXPECT_DOUBLE_EQ(residual_uniform_under_faults(u, weights, at::tensor({1}, kLong).to(at::kBool),
                                                 with(Fault::kResidualNotNormalised))
                       .item<double>(),
                   0.4);

  EXPECT_TRUE(same(target_kept_under_faults({1, 6}, 1, 3, with(Fault::kRejectedKvVisible)), {3, 6}))
      << "the slots end on the last draft";
  EXPECT_TRUE(same(draft_kept_under_faults({1, 6}, 0, 0, 3, with(Fault::kCacheAdvancedByDrafted)), {3, 6}))
      << "the slots end on the last draft fed";
  EXPECT_TRUE(same(draft_kept_under_faults({1, 7}, 2, 3, 3, with(Fault::kCacheAdvancedByDrafted)), {1, 8}))
      << "every draft taken as fed";
  EXPECT_TRUE(same(draft_kept_under_faults({1, 7}, 2, 3, 3, with(Fault::kDraftCacheShort)), {1, 8}));
  EXPECT_TRUE(same(draft_kept_under_faults({1, 6}, 1, 1, 3, with(Fault::kDraftCacheShort)), {1, 6}))
      << "short only after a fully accepted round";
  EXPECT_EQ(realigned_width_under_faults(9, 8, 3, with(Fault::kPaddingNeverRemoved)), 12);
  EXPECT_EQ(realigned_width_under_faults(13, 8, 3, with(Fault::kPaddingNeverRemoved)), 13);
  EXPECT_TRUE(same(source_under_faults({1, 4, 6}, 2, with(Fault::kKvNotShifted)), {1, 2, 6}));
  EXPECT_EQ(pool_slots_under_faults({3, 1, 4}, with(Fault::kWrongSequenceKv)), (std::vector<int64_t>{1, 4, 3}));

  const std::vector<WindowEntry> window = {{5, 0}, {7, 3}, {5, 1}};
  const BatchChoice mixed = batch_under_faults({{0, 2}, true}, window, 2, with(Fault::kGroupMixedLengths));
  EXPECT_EQ(mixed.members, (std::vector<size_t>{1, 2})) << "the longest waiting, whatever their lengths";
  EXPECT_TRUE(mixed.grouped);
  EXPECT_EQ(group_padding_under_faults(2, false, with(Fault::kGroupMixedLengths)), 2) << "a re-padded batch keeps its padding";

  RefillFaults loses;
  EXPECT_EQ(loses.copies_under_faults(4, with(Fault::kRefillLosesSequence)), 1) << "the first fill is whole";
  loses.window_started();
  EXPECT_EQ(loses.copies_under_faults(4, with(Fault::kRefillLosesSequence)), 0);
  EXPECT_EQ(loses.copies_under_faults(4, with(Fault::kRefillLosesSequence)), 1) << "one sequence only";
  RefillFaults duplicates;
  duplicates.window_started();
  EXPECT_EQ(duplicates.copies_under_faults(1, with(Fault::kRefillDuplicatesSequence)), 1) << "no place for a copy";
  EXPECT_EQ(duplicates.copies_under_faults(2, with(Fault::kRefillDuplicatesSequence)), 2);
  EXPECT_EQ(duplicates.copies_under_faults(2, with(Fault::kRefillDuplicatesSequence)), 1);
  EXPECT_EQ(kept_tokens_under_faults(2, 4, none), 2);
}

}  // namespace
}  // namespace specgate
