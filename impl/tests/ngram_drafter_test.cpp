// Prompt lookup's proposals on hand-made contexts, and the ragged rounds it drafts.
#include <algorithm>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ATen/ATen.h>

#include "impl/common/error.h"
#include "impl/decoding/batch_state.h"
#include "impl/decoding/ngram_drafter.h"
#include "impl/tests/tensor_test_support.h"

namespace specgate {
namespace {

std::vector<int64_t> propose(std::vector<int64_t> context, int64_t k, int64_t min_n = 1, int64_t max_n = 3) {
  return ngram_proposal(context, k, {.min_n = min_n, .max_n = max_n});
}

TEST(NgramProposal, TheLongestRecurringSuffixAtItsEarliestOccurrence) {
  // "1 2" recurs at 0, 3 and 6: the first is continued, not the latest.
  EXPECT_EQ(propose({1, 2, 9, 1, 2, 8, 1, 2, 7, 1, 2}, 4), (std::vector<int64_t>{9, 1, 2, 8}));
  // "3 1 2" recurs once, later than the first "1 2": the longer n wins.
  EXPECT_EQ(propose({1, 2, 5, 3, 1, 2, 6, 3, 1, 2}, 2), (std::vector<int64_t>{6, 3}));
}

TEST(NgramProposal, FewerTokensWhereTheContextEndsAndNoneWithoutARecurrence) {
  EXPECT_EQ(propose({0, 1, 2, 9, 9}, 4), (std::vector<int64_t>{9}));
  EXPECT_TRUE(propose({0, 1, 2, 9, 9}, 4, 2, 4).empty()) << "only a 1-gram recurs, below min_n";
  EXPECT_TRUE(propose({4, 5, 6}, 4).empty());
  EXPECT_TRUE(propose({4}, 4).empty());
  EXPECT_TRUE(propose({4, 4}, 0).empty());
}

TEST(NgramProposal, AnOccurrenceMayOverlapTheSuffix) {
  EXPECT_EQ(propose({5, 5, 5, 5}, 3), (std::vector<int64_t>{5}));
  EXPECT_EQ(propose({5, 5, 5, 5, 5, 5}, 2, 1, 2), (std::vector<int64_t>{5, 5}));
}

// fixtures/ngram/vllm_proposals.json: what vLLM's _find_longest_matched_ngram_and_propose_tokens
// (the commit and path it names) returned on these contexts; it caps k at max_model_len minus
// the context's length.
TEST(NgramProposal, EveryProposalMatchesVllmsRecordedOnes) {
  std::ifstream in(SPECGATE_VLLM_NGRAM_PROPOSALS);
  ASSERT_TRUE(in) << SPECGATE_VLLM_NGRAM_PROPOSALS;
  const nlohmann::json recorded = nlohmann::json::parse(in);
  const nlohmann::json& cases = recorded.at("cases");
  ASSERT_GT(cases.size(), 200u);
  int64_t proposed = 0;
  for (const nlohmann::json& c : cases) {
    const auto context = c["context"].get<std::vector<int64_t>>();
    const auto expected = c["proposal"].get<std::vector<int64_t>>();
    const int64_t room = c["max_model_len"].get<int64_t>() - static_cast<int64_t>(context.size());
    const int64_t k = std::max<int64_t>(0, std::min(c["k"].get<int64_t>(), room));
    const NgramOptions options{.min_n = c["min_n"].get<int64_t>(), .max_n = c["max_n"].get<int64_t>()};
    EXPECT_EQ(ngram_proposal(context, k, options), expected) << c.dump();
    proposed += !expected.empty();
  }
  EXPECT_GT(proposed, 100);
}

// vLLM's proposer does not stop at EOS; transformers' (and specgate's by default) stops before it.
TEST(NgramProposal, ThroughEosAsVllmsOrCutBeforeIt) {
  const std::vector<int64_t> context = {5, 6, 2, 7, 8, 5, 6};
  const std::vector<int64_t> eos = {2};
  EXPECT_EQ(ngram_proposal(context, 4, NgramOptions{.min_n = 2, .max_n = 2}, eos), (std::vector<int64_t>{}));
  EXPECT_EQ(ngram_proposal(context, 4, NgramOptions{.min_n = 2, .max_n = 2, .through_eos = true}, eos),
            (std::vector<int64_t>{2, 7, 8, 5}));
}

TEST(NgramOptions, SizesOutsideOneToSixtyFourAreInputErrors) {
  EXPECT_THROW(validate(NgramOptions{.min_n = 0, .max_n = 2}), InputError);
  EXPECT_THROW(validate(NgramOptions{.min_n = 3, .max_n = 2}), InputError);
  EXPECT_THROW(validate(NgramOptions{.min_n = 1, .max_n = 65}), InputError);
  EXPECT_NO_THROW(validate(NgramOptions{.min_n = 2, .max_n = 2}));
}

Row row(int64_t sequence, std::vector<int64_t> prompt, int64_t max_new_tokens, const DecodeOptions& options) {
  return Row(SequenceRequest{.sequence_index = sequence, .prompt = std::move(prompt), .max_new_tokens = max_new_tokens},
             options);
}

using test_support::row_of;

TEST(NgramDrafter, RaggedRowsPaddedWithTheirPendingTokenCutAtEosAndAtWhatARowCanKeep) {
  DecodeOptions options;
  options.eos_ids = {2};
  BatchState state;
  state.rows.push_back(row(0, {7, 8, 9, 4, 7, 8}, 20, options));   // "7 8" recurs: 9 4 7 8
  state.rows.push_back(row(1, {3, 4, 5}, 20, options));            // nothing recurs
  state.rows.push_back(row(2, {6, 1, 2, 1, 6, 1}, 20, options));   // "6 1" recurs: 2 (EOS) cut
  state.rows.push_back(row(3, {7, 8, 9, 4, 7, 8}, 3, options));    // may keep 2 drafts of 3 new tokens
  state.width = 6;
  NgramDrafter drafter({.min_n = 1, .max_n = 3});
  const DraftProposal proposal = drafter.propose(state, 3, options, nullptr);
  EXPECT_EQ(proposal.lengths, (std::vector<int64_t>{3, 0, 0, 2}));
  ASSERT_EQ(proposal.tokens.sizes(), (at::IntArrayRef{4, 3}));
  EXPECT_EQ(row_of(proposal.tokens, 0), (std::vector<int64_t>{9, 4, 7}));
  EXPECT_EQ(row_of(proposal.tokens, 1), (std::vector<int64_t>{5, 5, 5}));
  EXPECT_EQ(row_of(proposal.tokens, 2), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(row_of(proposal.tokens, 3), (std::vector<int64_t>{9, 4, 8}));
  EXPECT_FALSE(proposal.distributions.defined()) << "q is a point mass";
  EXPECT_EQ(drafter.model(), nullptr);
}

TEST(NgramDrafter, ARoundWithoutAnyMatchProposesNothing) {
  const DecodeOptions options;
  BatchState state;
  state.rows.push_back(row(0, {1, 2, 3}, 8, options));
  state.width = 3;
  NgramDrafter drafter({});
  const DraftProposal proposal = drafter.propose(state, 4, options, nullptr);
  EXPECT_EQ(proposal.tokens.size(1), 0);
  EXPECT_EQ(proposal.lengths, (std::vector<int64_t>{0}));
}

}  // namespace
}  // namespace specgate
