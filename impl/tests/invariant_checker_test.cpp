// The invariant checker on hand-built rounds and layouts: each of I1-I4 holds where it should
// and names the row, sequence, layer and slot where it does not.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "impl/decoding/batch_tensors.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/model/kv_cache.h"
#include "impl/tests/decoding_test_support.h"

namespace specgate {
namespace {

using test_support::models;
using testing::HasSubstr;

constexpr int64_t kEos = 2;

DecodeOptions options(bool rollback = false) {
  DecodeOptions o;
  o.eos_ids = {kEos};
  o.rollback = rollback;
  return o;
}

// The message of the InvariantViolation `check` throws, and the sequence it names; fails the
// test when it throws none.
template <typename Check>
std::pair<std::string, std::optional<int64_t>> violation(const Check& check) {
  try {
    check();
  } catch (const InvariantViolation& e) {
    return {e.what(), e.sequence_index};
  }
  ADD_FAILURE() << "no InvariantViolation";
  return {"", std::nullopt};
}

// Sequence 5 drafted 7 8 9; the target would have said 7 8 4 3.
RoundRecord round(int64_t accepted, std::vector<int64_t> appended, bool greedy = true) {
  return {.sequence_index = 5, .generated_before = 3, .max_new_tokens = 100, .greedy = greedy,
          .decision = {.accepted = accepted, .drafted = {7, 8, 9}, .target_choice = {7, 8, 4, 3}},
          .appended = std::move(appended)};
}

TEST(InvariantChecker, GreedyRoundsKeepTheAgreeingPrefixAndTheTargetsNextToken) {
  const DecodeOptions o = options();
  const InvariantChecker checker(models().target, o);
  EXPECT_NO_THROW(checker.check_round({round(2, {7, 8, 4})}));

  const auto [kept_too_many, sequence] = violation([&] { checker.check_round({round(3, {7, 8, 9, 3})}); });
  EXPECT_THAT(kept_too_many, HasSubstr("I4: sequence 5: kept 3 drafts, but the agreeing prefix is 2"));
  EXPECT_EQ(sequence, 5);
  EXPECT_THAT(violation([&] { checker.check_round({round(1, {7, 8})}); }).first,
              HasSubstr("kept 1 drafts, but the agreeing prefix is 2"));
  // The right count with the draft's token as the bonus.
  EXPECT_THAT(violation([&] { checker.check_round({round(2, {7, 8, 9})}); }).first,
              HasSubstr("appended 3 tokens (7 8 9) where the round's accounting gives 3 (7 8 4)"));
}

TEST(InvariantChecker, ARoundEndsAtItsFirstEosAndAtMaxNewTokensExactly) {
  const DecodeOptions o = options();
  const InvariantChecker checker(models().target, o);
  // Every draft agrees; the round's tokens stop at the EOS among them.
  RoundRecord eos = round(3, {7, kEos});
  eos.decision.drafted = {7, kEos, 9};
  eos.decision.target_choice = {7, kEos, 9, 3};
  EXPECT_NO_THROW(checker.check_round({eos}));
  eos.appended = {7, kEos, 9};
  EXPECT_THAT(violation([&] { checker.check_round({eos}); }).first,
              HasSubstr("appended 3 tokens (7 2 9) where the round's accounting gives 2 (7 2)"));

  RoundRecord limit = round(2, {7});
  limit.generated_before = 99;
  EXPECT_NO_THROW(checker.check_round({limit}));
  limit.appended = {7, 8};
  EXPECT_THAT(violation([&] { checker.check_round({limit}); }).first, HasSubstr("where the round's accounting gives 1 (7)"));
}

TEST(InvariantChecker, SampledRoundsAreCheckedOnTheirCountAndTheirKeptDrafts) {
  const DecodeOptions o = options();
  const InvariantChecker checker(models().target, o);
  // Sampling may keep fewer drafts than agree, and its bonus is its own.
  EXPECT_NO_THROW(checker.check_round({round(1, {7, 6}, /*greedy=*/false)}));
  EXPECT_NO_THROW(checker.check_round({round(3, {7, 8, 9, 1}, false)}));
  // Each row is judged by its own way of choosing.
  EXPECT_THROW(checker.check_round({round(1, {7, 6}, false), round(1, {7, 6})}), InvariantViolation);
  EXPECT_THAT(violation([&] { checker.check_round({round(2, {7, 6, 5}, false)}); }).first,
              HasSubstr("appended 3 tokens (7 6 5) where the round's accounting gives 3 (7 8 5)"));
}

TEST(InvariantChecker, RollbackMayKeepFewerDraftsThanAgree) {
  const DecodeOptions o = options(/*rollback=*/true);
  const InvariantChecker checker(models().target, o);
  EXPECT_NO_THROW(checker.check_round({round(1, {7, 8})}));
  EXPECT_THAT(violation([&] { checker.check_round({round(1, {7, 9})}); }).first,
              HasSubstr("where the round's accounting gives 2 (7 8)"));
}

// Rows of 3 and 5 tokens, each with its last token pending, both caches filled by one batched
// pass over the cached slots: a layout that satisfies I1-I3.
struct Layout {
  DecodeOptions options;
  BatchState state;
  KVCache target = models().target.make_cache(2, 8);
  KVCache draft = models().draft.make_cache(2, 8);

  Layout() {
    state.rows.emplace_back(SequenceRequest{.sequence_index = 10, .prompt = {11, 12, 13}}, options);
    state.rows.emplace_back(SequenceRequest{.sequence_index = 11, .prompt = {21, 22, 23, 24, 25}}, options);
    widen(5);
    for (size_t i = 0; i < state.rows.size(); ++i)
      state.rows[i].target_slots = state.rows[i].draft_slots = {state.padding(i), state.rows[i].content() - 1};
    fill(models().target, target);
    fill(models().draft, draft);
  }
  // The rows laid out `width` wide, their position ids computed with that padding.
  void widen(int64_t width) {
    state.width = width;
    for (size_t i = 0; i < state.rows.size(); ++i) state.rows[i].position_padding = state.padding(i);
  }
  void fill(const Transformer& model, KVCache& cache) const {
    const int64_t slots = state.cache_length();
    model.forward(tokens_at(state, 0, slots, at::kCPU), positions_at(state, 0, slots, at::kCPU),
                  key_valid(state, slots, at::kCPU), &cache);
  }
  void check(const InvariantChecker& checker) const { checker.check_layout(state, target, &models().draft, &draft); }
};

TEST(InvariantChecker, ACorrectLayoutPasses) {
  const Layout layout;
  const InvariantChecker checker(models().target, layout.options);
  EXPECT_NO_THROW(layout.check(checker));
  EXPECT_NO_THROW(checker.check_layout(layout.state, layout.target, nullptr, nullptr)) << "a drafter without a model";
}

TEST(InvariantChecker, WidthAndPositionPaddingMustFitTheRows) {
  const DecodeOptions o;
  const InvariantChecker checker(models().target, o);
  Layout wide;
  wide.widen(6);
  EXPECT_THAT(violation([&] { wide.check(checker); }).first, HasSubstr("I1: width 6 exceeds the longest row"));

  Layout narrow;
  narrow.widen(4);
  EXPECT_THAT(violation([&] { narrow.check(checker); }).first, HasSubstr("I1: row 1 holds more content than the width 4"));

  Layout shifted;
  shifted.state.rows[0].position_padding = 1;
  const auto [message, sequence] = violation([&] { shifted.check(checker); });
  EXPECT_THAT(message, HasSubstr("I2: row 0: position ids computed with padding 1, but the row's padding is 2"));
  EXPECT_EQ(sequence, 10);
}

TEST(InvariantChecker, EveryVisibleCacheSlotMustHoldWhatAStandalonePassComputes) {
  const DecodeOptions o;
  const InvariantChecker checker(models().target, o);
  Layout corrupted;
  // Row 0's second token (slot 2 + 1) in the target's layer 1.
  corrupted.target.key_at(1, 0, 3).add_(1e-6);
  const auto [message, sequence] = violation([&] { corrupted.check(checker); });
  EXPECT_THAT(message, HasSubstr("I3: target cache, row 0 (sequence 10), layer 1, slot 3 (token 1): K differs"));
  EXPECT_EQ(sequence, 10);

  Layout draft_value;
  draft_value.draft.value_at(0, 1, 0).add_(1e-6);
  EXPECT_THAT(violation([&] { draft_value.check(checker); }).first,
              HasSubstr("I3: draft cache, row 1 (sequence 11), layer 0, slot 0 (token 0): V differs"));

  // Padding slots are never read: what they hold is free.
  Layout padding;
  padding.target.key_at(0, 0, 0).add_(1.0);
  EXPECT_NO_THROW(padding.check(checker));
}

TEST(InvariantChecker, CachesMustHoldAllButThePendingToken) {
  const DecodeOptions o;
  const InvariantChecker checker(models().target, o);
  Layout lacking;
  lacking.state.rows[1].target_slots.count = 3;
  EXPECT_THAT(violation([&] { lacking.check(checker); }).first, HasSubstr("I3: target cache of row 1 holds 3 of its 5 tokens"));

  // The draft may lack its last draft too, after a fully accepted round; the target may not.
  Layout draft_behind;
  draft_behind.state.rows[1].draft_slots.count = 3;
  EXPECT_NO_THROW(draft_behind.check(checker));

  Layout misplaced;
  misplaced.state.rows[0].target_slots.first = 1;
  EXPECT_THAT(violation([&] { misplaced.check(checker); }).first,
              HasSubstr("I3: target cache of row 0 holds its tokens from slot 1, but the row's padding is 2"));

  Layout short_cache;
  short_cache.target.truncate(3);
  EXPECT_THAT(violation([&] { short_cache.check(checker); }).first, HasSubstr("I3: target cache holds 3 slots, expected 4"));
}

}  // namespace
}  // namespace specgate
