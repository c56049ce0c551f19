// One speculative round alone (SpeculativeRound::run) on a tiny float64 target with scripted
// drafts: what each row gains, where it ends (EOS, max_new_tokens), and the run of slots each
// cache keeps of it.
#include <algorithm>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include "impl/decoding/round.h"
#include "impl/tests/decoding_test_support.h"

namespace specgate {
namespace {

using namespace specgate::test_support;

constexpr int64_t kRoundDrafts = 3;

// Two rows of different prompt lengths after their prompt pass, laid out for their first round.
struct PreparedBatch {
  std::vector<SequenceRequest> requests = {{.sequence_index = 100, .prompt = {5, 17, 30, 41, 9}},
                                           {.sequence_index = 101, .prompt = {7, 2}}};
  DecodeOptions options;
  ScriptedDrafter drafter;
  DecodeStats stats;
  PhaseTimer timer{c10::Device(c10::kCPU), false};
  SpeculativeRound round;
  BatchLayout layout;
  BatchState& state;

  PreparedBatch(const DecodeOptions& decode, const std::string& script)
      : options(decode),
        drafter(oracle_script(requests, decode, script)),
        round(models().target, drafter, options, stats, timer),
        layout(models().target, nullptr, 2, 64, options),
        state(layout.state()) {
    std::vector<Row> rows;
    for (const SequenceRequest& request : requests) rows.emplace_back(request, options);
    const StagedPrompts staged = round.prefill(rows);
    layout.admit(std::move(rows), staged.caches, staged.cache_rows);
  }

  std::vector<int64_t> oracle(size_t row) const {
    return oracle_outputs({requests[row]}, options).at(requests[row].sequence_index);
  }
  std::vector<int64_t> generated(size_t row) const {
    const Row& r = state.rows[row];
    return {r.tokens.begin() + r.prompt_length, r.tokens.end()};
  }
};

DecodeOptions options_for(int64_t max_new_tokens, std::vector<int64_t> eos_ids = {}) {
  DecodeOptions o = greedy_options(kRoundDrafts, max_new_tokens);
  o.eos_ids = std::move(eos_ids);
  return o;
}

TEST(Round, AFullyAcceptedRoundKeepsEveryDraftAndTheBonus) {
  PreparedBatch batch(options_for(12), "all-accept");
  const int64_t content = batch.state.rows[1].content(), padding = batch.state.padding(1);
  const std::vector<RoundRecord> records = batch.round.run(batch.layout);

  const std::vector<int64_t> oracle = batch.oracle(1);
  EXPECT_EQ(batch.generated(1), std::vector<int64_t>(oracle.begin(), oracle.begin() + 1 + kRoundDrafts + 1));
  EXPECT_EQ(records[1].decision.accepted, kRoundDrafts);
  EXPECT_EQ(records[1].appended.size(), static_cast<size_t>(kRoundDrafts + 1));
  EXPECT_EQ(batch.state.rows[1].accept_lengths, (std::vector<int64_t>{kRoundDrafts + 1}));
  // The target cache keeps the old content and every draft; the bonus is pending.
  EXPECT_EQ(batch.state.rows[1].target_slots.first, padding);
  EXPECT_EQ(batch.state.rows[1].target_slots.count, content + kRoundDrafts);
  EXPECT_FALSE(batch.state.rows[1].finished);
  EXPECT_EQ(batch.stats.accepted, 2 * kRoundDrafts);
  EXPECT_EQ(batch.stats.drafted, 2 * kRoundDrafts);
}

TEST(Round, ARejectedRoundKeepsOnlyTheTargetsChoice) {
  PreparedBatch batch(options_for(12), "all-reject");
  const int64_t content = batch.state.rows[0].content(), padding = batch.state.padding(0);
  const std::vector<RoundRecord> records = batch.round.run(batch.layout);

  const std::vector<int64_t> oracle = batch.oracle(0);
  EXPECT_EQ(batch.generated(0), std::vector<int64_t>(oracle.begin(), oracle.begin() + 2));
  EXPECT_EQ(records[0].decision.accepted, 0);
  EXPECT_NE(records[0].decision.drafted[0], oracle[1]) << "the script's wrong first draft";
  EXPECT_EQ(records[0].decision.target_choice[0], oracle[1]);
  EXPECT_EQ(batch.state.rows[0].target_slots.first, padding);
  EXPECT_EQ(batch.state.rows[0].target_slots.count, content) << "the rejected drafts' slots are dropped";
  EXPECT_EQ(batch.stats.accepted, 0);
}

TEST(Round, ARowEndsAtItsFirstEosExactlyThere) {
  // The EOS is the oracle's third token of row 1: its first round would append tokens 2 to 5.
  const std::vector<int64_t> oracle = PreparedBatch(options_for(12), "all-accept").oracle(1);
  ASSERT_EQ(std::count(oracle.begin(), oracle.begin() + 3, oracle[2]), 1) << "pick an EOS seen once";
  PreparedBatch batch(options_for(12, {oracle[2]}), "all-accept");
  const std::vector<RoundRecord> records = batch.round.run(batch.layout);

  EXPECT_EQ(batch.generated(1), std::vector<int64_t>(oracle.begin(), oracle.begin() + 3));
  EXPECT_TRUE(batch.state.rows[1].finished);
  EXPECT_EQ(batch.state.rows[1].finish_reason, FinishReason::kEos);
  EXPECT_EQ(records[1].appended.size(), 2u);
  EXPECT_EQ(batch.state.rows[1].accept_lengths, (std::vector<int64_t>{2}));
}

TEST(Round, ARowEndsAtMaxNewTokensExactlyThere) {
  PreparedBatch batch(options_for(3), "all-accept");
  const std::vector<RoundRecord> records = batch.round.run(batch.layout);

  for (size_t row : {0, 1}) {
    const std::vector<int64_t> oracle = batch.oracle(row);
    EXPECT_EQ(batch.generated(row), std::vector<int64_t>(oracle.begin(), oracle.begin() + 3));
    EXPECT_TRUE(batch.state.rows[row].finished);
    EXPECT_EQ(batch.state.rows[row].finish_reason, FinishReason::kLength);
    EXPECT_EQ(records[row].decision.accepted, kRoundDrafts) << "accepted, though only two tokens fit";
    EXPECT_EQ(records[row].appended.size(), 2u);
  }
}

}  // namespace
}  // namespace specgate
