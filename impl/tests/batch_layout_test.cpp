// The batch layout on its own: where admit() and keep() put each row, and that admit(),
// realign(), store() and compose() move every row's K/V to where its slots say, judged by the invariant
// checker (I1-I3) against standalone passes of each row.
#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "impl/decoding/batch_layout.h"
#include "impl/decoding/batch_tensors.h"
#include "impl/decoding/dispatch_counter.h"
#include "impl/decoding/invariant_checker.h"
#include "impl/decoding/prompt_pass.h"
#include "impl/tests/decoding_test_support.h"

namespace specgate {
namespace {

using test_support::models;

constexpr int64_t kLayoutDrafts = 3;

DecodeOptions options() {
  DecodeOptions o;
  o.draft_tokens = kLayoutDrafts;
  return o;
}

std::vector<Row> rows_of(const std::vector<std::vector<int64_t>>& prompts, const DecodeOptions& o,
                         int64_t first_sequence = 10) {
  std::vector<Row> rows;
  for (size_t i = 0; i < prompts.size(); ++i) {
    rows.emplace_back(SequenceRequest{.sequence_index = first_sequence + static_cast<int64_t>(i), .prompt = prompts[i]},
                      o);
  }
  return rows;
}

// What a prompt pass leaves of `rows` for a batch to admit: the K/V of every token but each
// row's last, which is pending (as the first generated token is after SpeculativeRound::prefill).
StagedPrompts passed_but_last(std::vector<Row>& rows) {
  std::vector<Row> leading = rows;
  for (Row& row : leading) row.tokens.pop_back();
  const PromptPacking packing(leading);
  StagedPrompts staged{{prompt_pass(models().target, leading, packing).cache,
                        prompt_pass(models().draft, leading, packing).cache},
                       {}};
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].target_slots = rows[i].draft_slots = {packing.runs[i].first, packing.runs[i].count};
    staged.cache_rows.push_back(packing.runs[i].row);
  }
  return staged;
}

// Rows of 3, 5 and 4 tokens admitted after their prompt pass: what a decoder holds between rounds.
struct Filled {
  DecodeOptions o = options();
  BatchLayout layout{models().target, &models().draft, 5, 16, o};
  InvariantChecker checker{models().target, o};

  Filled() { admit(rows_of({{11, 12, 13}, {21, 22, 23, 24, 25}, {31, 32, 33, 34}}, o)); }

  void admit(std::vector<Row> rows) {
    const StagedPrompts staged = passed_but_last(rows);
    layout.admit(std::move(rows), staged.caches, staged.cache_rows);
  }

  void check() const {
    checker.check_layout(layout.state(), layout.target_cache(), &models().draft, layout.draft_cache());
  }
  std::vector<int64_t> sequences() const {
    std::vector<int64_t> out;
    for (const Row& row : layout.state().rows) out.push_back(row.sequence_index);
    return out;
  }
};

TEST(BatchLayout, AdmitPadsEveryRowToTheLongest) {
  const Filled filled;
  const BatchState& state = filled.layout.state();
  EXPECT_EQ(state.width, 5);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(state.rows[i].position_padding, std::vector<int64_t>({2, 0, 1})[i]);
    EXPECT_EQ(state.rows[i].target_slots.first, state.rows[i].position_padding);
    EXPECT_EQ(state.rows[i].draft_slots.count, state.rows[i].content() - 1);
  }
  EXPECT_EQ(filled.layout.target_cache().batch_size(), 3);
  EXPECT_EQ(filled.layout.target_cache().length(), 4);
  EXPECT_EQ(filled.layout.draft_cache()->batch_size(), 3);

  const BatchLayout without_draft(models().target, nullptr, 4, 16, filled.o);
  EXPECT_EQ(without_draft.draft_cache(), nullptr);
}

TEST(BatchLayout, NewcomersJoinRowsDecodingWhichAreRepaddedToTheNewWidth) {
  Filled filled;
  filled.admit(rows_of({{41, 42, 43, 44, 45, 46, 47}, {51, 52}}, filled.o, 20));
  const BatchState& state = filled.layout.state();
  EXPECT_EQ(filled.sequences(), (std::vector<int64_t>{10, 11, 12, 20, 21}));
  EXPECT_EQ(state.width, 7);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(state.rows[i].position_padding, std::vector<int64_t>({4, 2, 3, 0, 5})[i]);
  EXPECT_EQ(state.rows[1].realignments, 1) << "moved two slots on";
  EXPECT_NO_THROW(filled.check());
}

TEST(BatchLayout, KeepHoldsTheContentAndTheAcceptedDraftsTheCachesHold) {
  const DecodeOptions o = options();
  BatchLayout layout(models().target, nullptr, 1, 16, o);
  for (const int64_t accepted : {0, 2, 3}) {
    layout.state().rows = rows_of({{1, 2, 3}}, o);
    layout.state().width = 5;  // two padding slots
    layout.keep(0, accepted, o.draft_tokens);
    const Row& row = layout.state().rows[0];
    EXPECT_EQ(row.target_slots.first, 2);
    EXPECT_EQ(row.target_slots.count, 3 + accepted) << "the target cache holds every draft";
    EXPECT_EQ(row.draft_slots.first, 2);
    EXPECT_EQ(row.draft_slots.count, 3 + std::min<int64_t>(accepted, kLayoutDrafts - 1)) << "the last draft is never fed";
  }
}

TEST(BatchLayout, ALaidOutBatchPassesTheChecker) {
  const Filled filled;
  EXPECT_NO_THROW(filled.check());
}

TEST(BatchLayout, RealignRepadsTheRowsGoingOnAndMovesTheirSlots) {
  Filled filled;
  const std::vector<int64_t> going_on = {0, 2};  // the longest row leaves
  filled.layout.realign(going_on);
  EXPECT_EQ(filled.sequences(), (std::vector<int64_t>{10, 12}));
  EXPECT_EQ(filled.layout.state().width, 4);
  EXPECT_EQ(filled.layout.target_cache().batch_size(), 2);
  EXPECT_EQ(filled.layout.state().rows[0].target_slots.first, 1);
  EXPECT_NO_THROW(filled.check());
}

TEST(BatchLayout, StoredRowsComeBackFromThePoolInAnyOrderBesideRowsThatStay) {
  Filled filled;
  ModelCaches pool{models().target.make_cache(5, 16), models().draft.make_cache(5, 16)};
  std::vector<Row> rows = filled.layout.take_rows();
  EXPECT_TRUE(filled.layout.state().rows.empty());
  const std::vector<Row*> stored = {&rows[2], &rows[0], &rows[1]};
  const std::vector<int64_t> held = {2, 0, 1}, slots = {2, 4, 0};
  filled.layout.store(stored, held, pool, slots);
  for (const Row& row : rows) EXPECT_EQ(row.target_slots.first, 0) << "stored unpadded";

  // Rows 2 and 0 from the pool.
  std::vector<Row> from_pool;
  from_pool.push_back(rows[2]);
  from_pool.push_back(rows[0]);
  const std::vector<int64_t> pooled = {2, 4}, paddings = {0, 1};
  filled.layout.compose(std::move(from_pool), {}, &pool, pooled, 4, paddings);
  EXPECT_EQ(filled.sequences(), (std::vector<int64_t>{12, 10}));
  EXPECT_EQ(filled.layout.state().rows[1].position_padding, 1);
  EXPECT_NO_THROW(filled.check());

  // Row 0 (batch row 1) stays, row 1 joins it from the pool.
  std::vector<Row> next = filled.layout.take_rows();
  std::vector<Row> mixed;
  mixed.push_back(std::move(next[1]));
  mixed.push_back(rows[1]);
  const std::vector<int64_t> stays = {1}, joins = {0}, padded = {2, 0};
  filled.layout.compose(std::move(mixed), stays, &pool, joins, 5, padded);
  EXPECT_EQ(filled.sequences(), (std::vector<int64_t>{10, 11}));
  EXPECT_NO_THROW(filled.check());
}

TEST(BatchLayout, RowsInTheirPlaceStayWithoutAnOperatorAndReorderedOnesAreGathered) {
  Filled filled;
  std::vector<Row> rows = filled.layout.take_rows();
  const std::vector<int64_t> held = {0, 1, 2}, paddings = {2, 0, 1};
  int64_t operators = -1;
  {
    const DispatchCounter counter;
    filled.layout.compose(std::move(rows), held, nullptr, {}, 5, paddings);
    operators = counter.counts().operators;
  }
  EXPECT_EQ(operators, 0) << "no cache slot moved";
  EXPECT_NO_THROW(filled.check());

  // The rows in reverse order: each cache gathers them.
  std::vector<Row> again = filled.layout.take_rows();
  std::reverse(again.begin(), again.end());
  const std::vector<int64_t> reversed = {2, 1, 0}, repadded = {1, 0, 2};
  {
    const DispatchCounter counter;
    filled.layout.compose(std::move(again), reversed, nullptr, {}, 5, repadded);
    operators = counter.counts().operators;
  }
  EXPECT_GT(operators, 0);
  EXPECT_EQ(filled.sequences(), (std::vector<int64_t>{12, 11, 10}));
  EXPECT_NO_THROW(filled.check());
}

TEST(BatchLayout, EveryRowNeedsItsPaddingAndASource) {
  Filled filled;
  std::vector<Row> rows = filled.layout.take_rows();
  const std::vector<int64_t> held = {0, 1}, paddings = {2, 0, 1};
  EXPECT_THROW(filled.layout.compose(std::move(rows), held, nullptr, {}, 5, paddings), c10::Error);
}

// The message of the c10::Error `call` throws; empty when it throws none.
template <typename Call>
std::string error_of(const Call& call) {
  try {
    call();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

TEST(BatchLayout, APoolMustHoldTheCachesTheBatchHolds) {
  Filled filled;
  ModelCaches target_only{models().target.make_cache(3, 16), std::nullopt};
  std::vector<Row> rows = filled.layout.take_rows();
  const std::vector<Row*> stored = {&rows[0]};
  const std::vector<int64_t> held = {0}, slots = {1};
  EXPECT_THAT(error_of([&] { filled.layout.store(stored, held, target_only, slots); }),
              testing::HasSubstr("store: the pool holds other caches"));
  std::vector<Row> one;
  one.push_back(rows[0]);
  const std::vector<int64_t> pooled = {1}, paddings = {0};
  EXPECT_THAT(error_of([&] { filled.layout.compose(std::move(one), {}, &target_only, pooled, 3, paddings); }),
              testing::HasSubstr("BatchLayout::compose: the pool holds other caches"));
}

}  // namespace
}  // namespace specgate
