// The acceptance rule alone (verify_drafts), on hand-built logits and draft distributions:
// greedy prefixes and bonuses, rollback, and sampled acceptance decided uniform by uniform
// against each row's own stream.
#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "impl/decoding/acceptance.h"
#include "impl/tests/tensor_test_support.h"

namespace specgate {
namespace {

using test_support::kDouble;
using test_support::kLong;

BatchState batch_of(int64_t rows, const DecodeOptions& options) {
  BatchState state;
  for (int64_t i = 0; i < rows; ++i) state.rows.emplace_back(SequenceRequest{.sequence_index = i, .prompt = {1}}, options);
  state.width = 1;
  return state;
}

// Logits [1, N, V] whose argmax at position n is choices[n].
at::Tensor greedy_logits(const std::vector<int64_t>& choices, int64_t vocab) {
  at::Tensor logits = at::zeros({1, static_cast<int64_t>(choices.size()), vocab}, kDouble);
  for (size_t n = 0; n < choices.size(); ++n) logits[0][static_cast<int64_t>(n)][choices[n]] = 1.0;
  return logits;
}

DraftProposal greedy_drafts(const std::vector<std::vector<int64_t>>& rows) {
  std::vector<int64_t> flat;
  for (const auto& row : rows) flat.insert(flat.end(), row.begin(), row.end());
  return {at::tensor(flat, kLong).view({static_cast<int64_t>(rows.size()), -1}), {}, at::Tensor()};
}

// log(probabilities), -inf where a probability is 0: the logits of exactly that distribution.
at::Tensor logits_of(const at::Tensor& probabilities) { return probabilities.log(); }

TEST(Acceptance, GreedyKeepsEveryAgreeingDraftAndTheTargetsNextChoice) {
  DecodeOptions options;
  BatchState state = batch_of(1, options);
  const at::Tensor logits = greedy_logits({2, 3, 1, 4}, 5);
  const std::vector<RowDecision> all = verify_drafts(logits, greedy_drafts({{2, 3, 1}}), state, options);
  EXPECT_EQ(all[0].accepted, 3);
  EXPECT_EQ(all[0].new_tokens, (std::vector<int64_t>{2, 3, 1, 4}));
  EXPECT_EQ(all[0].drafted, (std::vector<int64_t>{2, 3, 1}));
  EXPECT_EQ(all[0].target_choice, (std::vector<int64_t>{2, 3, 1, 4}));

  const std::vector<RowDecision> second = verify_drafts(logits, greedy_drafts({{2, 0, 1}}), state, options);
  EXPECT_EQ(second[0].accepted, 1) << "the third draft agrees, but after a mismatch nothing counts";
  EXPECT_EQ(second[0].new_tokens, (std::vector<int64_t>{2, 3}));

  const std::vector<RowDecision> none = verify_drafts(logits, greedy_drafts({{0, 3, 1}}), state, options);
  EXPECT_EQ(none[0].accepted, 0);
  EXPECT_EQ(none[0].new_tokens, (std::vector<int64_t>{2}));
}

TEST(Acceptance, RollbackKeepsTheBatchsSmallestAcceptanceInEveryRow) {
  DecodeOptions options;
  options.rollback = true;
  BatchState state = batch_of(2, options);
  const at::Tensor logits = at::cat({greedy_logits({2, 3, 1, 4}, 5), greedy_logits({0, 1, 2, 3}, 5)});
  const std::vector<RowDecision> v = verify_drafts(logits, greedy_drafts({{2, 3, 1}, {0, 4, 2}}), state, options);
  EXPECT_EQ(v[0].accepted, 1);
  EXPECT_EQ(v[0].new_tokens, (std::vector<int64_t>{2, 3})) << "the bonus is the target's choice after the kept draft";
  EXPECT_EQ(v[1].accepted, 1);
  EXPECT_EQ(v[1].new_tokens, (std::vector<int64_t>{0, 1}));
}

TEST(Acceptance, ARowIsTestedOnItsOwnDraftsOnlyAndTakesItsBonusRightAfterThem) {
  DecodeOptions options;
  BatchState state = batch_of(3, options);
  const at::Tensor logits = greedy_logits({2, 3, 1, 4}, 5).expand({3, 4, 5}).contiguous();
  // Every row's padding agrees with the target: kept, it would show.
  DraftProposal ragged = greedy_drafts({{2, 3, 1}, {2, 3, 1}, {2, 3, 1}});
  ragged.lengths = {3, 1, 0};
  const std::vector<RowDecision> v = verify_drafts(logits, ragged, state, options);
  EXPECT_EQ(v[0].accepted, 3);
  EXPECT_EQ(v[0].new_tokens, (std::vector<int64_t>{2, 3, 1, 4}));
  EXPECT_EQ(v[1].accepted, 1);
  EXPECT_EQ(v[1].new_tokens, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(v[1].drafted, (std::vector<int64_t>{2}));
  EXPECT_EQ(v[2].accepted, 0);
  EXPECT_EQ(v[2].new_tokens, (std::vector<int64_t>{2})) << "a row without drafts still gains the target's token";
  EXPECT_TRUE(v[2].drafted.empty());
}

// Sampled, K = 1, one position's p and q over V = 3 for every row; position 1 (the bonus after
// an accepted draft) is a point mass on token 2.
struct SampledRound {
  at::Tensor logits;  // [B, 2, 3]
  DraftProposal proposal;
};

SampledRound sampled_round(int64_t rows, const at::Tensor& p, const at::Tensor& q, int64_t draft) {
  const at::Tensor after = at::tensor({0.0, 0.0, 1.0}, kDouble);
  const at::Tensor one = logits_of(at::stack({p, after})).unsqueeze(0);
  return {one.expand({rows, 2, 3}).contiguous(),
          {at::full({rows, 1}, draft, kLong), {}, q.view({1, 1, 3}).expand({rows, 1, 3}).contiguous()}};
}

TEST(Acceptance, SampledAcceptsExactlyWhenTheUniformFallsUnderPOverQ) {
  DecodeOptions options;
  options.sampling = {.temperature = 1.0, .seed = 17};
  const int64_t rows = 400;
  BatchState state = batch_of(rows, options);
  // Draft token 0: p 0.5, q 0.9, so accepted with probability 5/9; a rejection's residual
  // max(0, p - q) is (0, 0.25, 0.15), drawn as (0, 0.625, 0.375) by the next uniform.
  const SampledRound round = sampled_round(rows, at::tensor({0.5, 0.3, 0.2}, kDouble), at::tensor({0.9, 0.05, 0.05}, kDouble), 0);
  std::vector<SequenceRng> streams;
  for (const Row& row : state.rows) streams.push_back(row.rng);
  const std::vector<RowDecision> v = verify_drafts(round.logits, round.proposal, state, options);
  int64_t accepted = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const double u = streams[i].uniform();
    const bool accept = u * 0.9 < 0.5;
    accepted += accept;
    ASSERT_EQ(v[i].accepted, accept ? 1 : 0) << "row " << i << " u " << u;
    // A sequential walk uses one uniform per draft tested and one for the bonus.
    const int64_t bonus = accept ? 2 : streams[i].uniform() < 0.625 ? 1 : 2;
    if (accept) streams[i].uniform();
    EXPECT_EQ(v[i].new_tokens, accept ? (std::vector<int64_t>{0, 2}) : (std::vector<int64_t>{bonus})) << "row " << i;
    EXPECT_EQ(state.rows[i].rng.uniform(), streams[i].uniform()) << "row " << i << " consumed another count";
  }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, rows);
}

TEST(Acceptance, APointMassDraftIsKeptWithProbabilityPAndARejectionDrawsFromPWithoutIt) {
  DecodeOptions options;
  options.sampling = {.temperature = 1.0, .seed = 23};
  const int64_t rows = 400;
  BatchState state = batch_of(rows, options);
  // Draft token 0 with p 0.5: kept when u < 0.5; else the bonus is drawn from (0, 0.3, 0.2)
  // renormalised, (0, 0.6, 0.4). Row 1 proposes nothing: its bonus is drawn from p.
  const at::Tensor p = at::tensor({0.5, 0.3, 0.2}, kDouble);
  SampledRound round = sampled_round(rows, p, p, 0);
  round.proposal.distributions = at::Tensor();
  round.proposal.lengths.assign(rows, 1);
  round.proposal.lengths[1] = 0;
  std::vector<SequenceRng> streams;
  for (const Row& row : state.rows) streams.push_back(row.rng);
  const std::vector<RowDecision> v = verify_drafts(round.logits, round.proposal, state, options);
  int64_t accepted = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const double u = streams[i].uniform();
    if (i == 1) {
      EXPECT_EQ(v[i].accepted, 0);
      EXPECT_EQ(v[i].new_tokens, (std::vector<int64_t>{u < 0.5 ? 0 : u < 0.8 ? 1 : 2})) << "drawn from p with its first uniform";
      EXPECT_EQ(state.rows[i].rng.uniform(), streams[i].uniform()) << "one uniform, for the bonus";
      continue;
    }
    const bool accept = u < 0.5;
    accepted += accept;
    ASSERT_EQ(v[i].accepted, accept ? 1 : 0) << "row " << i << " u " << u;
    const double next = streams[i].uniform();
    const int64_t bonus = accept ? 2 : next < 0.6 ? 1 : 2;
    EXPECT_EQ(v[i].new_tokens, accept ? (std::vector<int64_t>{0, 2}) : (std::vector<int64_t>{bonus})) << "row " << i;
    EXPECT_EQ(state.rows[i].rng.uniform(), streams[i].uniform()) << "row " << i << " consumed another count";
  }
  EXPECT_GT(accepted, 150);
  EXPECT_LT(accepted, 250);
}

TEST(Acceptance, SampledAcceptsEveryDraftWhenPEqualsQ) {
  DecodeOptions options;
  options.sampling = {.temperature = 1.0, .seed = 3};
  const at::Tensor p = at::tensor({0.2, 0.3, 0.5}, kDouble);
  const int64_t rows = 200;
  BatchState state = batch_of(rows, options);
  const SampledRound round = sampled_round(rows, p, p, 1);
  for (const RowDecision& v : verify_drafts(round.logits, round.proposal, state, options)) {
    EXPECT_EQ(v.accepted, 1);
    EXPECT_EQ(v.new_tokens, (std::vector<int64_t>{1, 2}));
  }
}

TEST(Acceptance, SampledNeverAcceptsADraftTheTargetGivesNoMass) {
  DecodeOptions options;
  options.sampling = {.temperature = 1.0, .seed = 5};
  const int64_t rows = 200;
  BatchState state = batch_of(rows, options);
  // q is all on token 0, which p excludes: rejected every time, and the residual is p itself.
  const SampledRound round = sampled_round(rows, at::tensor({0.0, 0.5, 0.5}, kDouble), at::tensor({1.0, 0.0, 0.0}, kDouble), 0);
  int64_t ones = 0;
  for (const RowDecision& v : verify_drafts(round.logits, round.proposal, state, options)) {
    ASSERT_EQ(v.accepted, 0);
    ASSERT_EQ(v.new_tokens.size(), 1u);
    EXPECT_NE(v.new_tokens[0], 0);
    ones += v.new_tokens[0] == 1;
  }
  EXPECT_GT(ones, 60) << "the bonus follows the residual, half on each token";
  EXPECT_LT(ones, 140);
}

TEST(Acceptance, SampledTakesPAfterTemperatureAndFilters) {
  // Top-k 1 leaves the target one token: a draft of any other is rejected, whatever q says.
  DecodeOptions options;
  options.sampling = {.temperature = 0.7, .top_k = 1, .seed = 9};
  const int64_t rows = 100;
  BatchState state = batch_of(rows, options);
  const SampledRound round = sampled_round(rows, at::tensor({0.3, 0.6, 0.1}, kDouble), at::tensor({0.5, 0.5, 0.0}, kDouble), 0);
  for (const RowDecision& v : verify_drafts(round.logits, round.proposal, state, options)) {
    ASSERT_EQ(v.accepted, 0);
    EXPECT_EQ(v.new_tokens, (std::vector<int64_t>{1}));
  }
}

}  // namespace
}  // namespace specgate
