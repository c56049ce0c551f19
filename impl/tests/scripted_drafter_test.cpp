// Scripted drafts on hand-built rows: the true continuation for as many tokens as the script
// says in the row's current round, a wrong token after, and the script's round index.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "impl/decoding/batch_state.h"
#include "impl/decoding/scripted_drafter.h"
#include "impl/tests/tensor_test_support.h"

namespace specgate {
namespace {

constexpr int64_t kVocab = 50;

// Sequence 7 has generated 1 token in 1 round; sequence 8 none yet.
BatchState two_rows() {
  const DecodeOptions options;
  BatchState state;
  state.rows.emplace_back(SequenceRequest{.sequence_index = 7, .prompt = {1, 2, 3}}, options);
  state.rows.back().tokens.push_back(10);
  state.rows.back().accept_lengths = {1};
  state.rows.emplace_back(SequenceRequest{.sequence_index = 8, .prompt = {4}}, options);
  state.width = 4;
  return state;
}

ScriptedDrafts script(AcceptanceScript acceptance) {
  return {.continuations = {{7, {10, 11, 12, 49}}, {8, {20, 21}}}, .script = std::move(acceptance), .vocab_size = kVocab};
}

using test_support::row_of;

TEST(ScriptedDrafts, TheTruthForAsManyTokensAsTheScriptSaysThenAWrongToken) {
  std::vector<std::pair<int64_t, int64_t>> asked;
  const ScriptedDrafts drafts = script([&asked](int64_t sequence, int64_t round) {
    asked.emplace_back(sequence, round);
    return sequence == 7 ? 2 : 0;
  });
  const at::Tensor tokens = drafts.tokens(two_rows(), 3);
  ASSERT_EQ(tokens.sizes(), (at::IntArrayRef{2, 3}));
  // Row 0 continues after its first generated token: 11, 12 right, then 49 + 1 wrapped to 0.
  EXPECT_EQ(row_of(tokens, 0), (std::vector<int64_t>{11, 12, 0}));
  // Row 1 gets nothing right; past the end of its continuation the truth is taken as 0.
  EXPECT_EQ(row_of(tokens, 1), (std::vector<int64_t>{21, 22, 1}));
  EXPECT_EQ(asked, (std::vector<std::pair<int64_t, int64_t>>{{7, 1}, {8, 0}})) << "the round is the row's count of rounds";
}

TEST(ScriptedDrafts, AScriptBeyondKDraftsEverythingRight) {
  const at::Tensor tokens = script([](int64_t, int64_t) { return 10; }).tokens(two_rows(), 2);
  EXPECT_EQ(row_of(tokens, 0), (std::vector<int64_t>{11, 12}));
  EXPECT_EQ(row_of(tokens, 1), (std::vector<int64_t>{20, 21}));
}

TEST(ScriptedDrafts, ARowWithoutAContinuationIsAnError) {
  BatchState state = two_rows();
  state.rows.emplace_back(SequenceRequest{.sequence_index = 9, .prompt = {5}}, DecodeOptions{});
  EXPECT_THROW(script([](int64_t, int64_t) { return 1; }).tokens(state, 2), c10::Error);
}

TEST(ScriptedDrafter, HasNoModelAndProposesTheScriptsTokens) {
  ScriptedDrafter drafter(script([](int64_t, int64_t) { return 1; }));
  EXPECT_EQ(drafter.model(), nullptr);
  BatchState state = two_rows();
  const DraftProposal proposal = drafter.propose(state, 2, DecodeOptions{}, nullptr);
  EXPECT_EQ(row_of(proposal.tokens, 0), (std::vector<int64_t>{11, 13}));
  EXPECT_EQ(row_of(proposal.tokens, 1), (std::vector<int64_t>{20, 22}));
  EXPECT_FALSE(proposal.distributions.defined());
}

}  // namespace
}  // namespace specgate
