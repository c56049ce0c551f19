#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "fixtures/models/tiny_configs.h"
#include "impl/model/weights.h"
#include "oracle/oracle.h"

namespace specgate {
namespace {

const auto kLong = at::TensorOptions().dtype(at::kLong);

class Oracle : public testing::Test {
 protected:
  Oracle() : model_(tiny_config("qwen3"), random_weights(tiny_config("qwen3"), at::TensorOptions().dtype(at::kDouble), 11)) {}

  // Next-token logits after `ids`, from one full pass without a cache.
  at::Tensor next_logits(const std::vector<int64_t>& ids) const {
    const int64_t n = static_cast<int64_t>(ids.size());
    const at::Tensor hidden = model_.forward(at::tensor(ids, kLong).unsqueeze(0), at::arange(n, kLong).unsqueeze(0),
                                             at::ones({1, n}, at::TensorOptions().dtype(at::kBool)), nullptr);
    return model_.logits(hidden[0][n - 1]);
  }

  Transformer model_;
  const std::vector<int64_t> prompt_ = {256, 72, 101, 108, 108, 111};
};

TEST_F(Oracle, GreedyFollowsTheArgmaxOfAFullPassAtEveryStep) {
  const SequenceResult out = oracle_generate(model_, prompt_, {.max_new_tokens = 12}, 0);
  ASSERT_EQ(out.tokens.size(), 12u);
  EXPECT_EQ(out.finish_reason, FinishReason::kLength);
  std::vector<int64_t> context = prompt_;
  for (int64_t token : out.tokens) {
    EXPECT_EQ(token, next_logits(context).argmax().item<int64_t>());
    context.push_back(token);
  }
}

TEST_F(Oracle, GreedyIsDeterministic) {
  const SequenceResult a = oracle_generate(model_, prompt_, {.max_new_tokens = 10}, 0);
  const SequenceResult b = oracle_generate(model_, prompt_, {.max_new_tokens = 10}, 5);
  EXPECT_EQ(a.tokens, b.tokens);
}

TEST_F(Oracle, StopsAtTheFirstEosAndKeepsIt) {
  const SequenceResult free_run = oracle_generate(model_, prompt_, {.max_new_tokens = 10}, 0);
  const int64_t eos = free_run.tokens[3];
  const auto first = std::find(free_run.tokens.begin(), free_run.tokens.end(), eos) - free_run.tokens.begin();
  const SequenceResult stopped = oracle_generate(model_, prompt_, {.max_new_tokens = 10, .eos_ids = {999, eos}}, 0);
  EXPECT_EQ(stopped.finish_reason, FinishReason::kEos);
  EXPECT_EQ(stopped.tokens, std::vector<int64_t>(free_run.tokens.begin(), free_run.tokens.begin() + first + 1));
  EXPECT_EQ(stopped.top_logprobs.size(), stopped.tokens.size());
}

TEST_F(Oracle, MaxNewTokensIsExactWithOnePassPerToken) {
  for (int64_t n : {1, 2, 7}) {
    const SequenceResult out = oracle_generate(model_, prompt_, {.max_new_tokens = n}, 3);
    EXPECT_EQ(out.tokens.size(), size_t(n));
    EXPECT_EQ(out.rounds, n - 1) << "passes after the prompt pass";
    EXPECT_EQ(out.decoding_steps(), n);
    EXPECT_EQ(out.sequence_index, 3);
  }
}

TEST_F(Oracle, RecordsTheModelsTopLogprobs) {
  const SequenceResult out = oracle_generate(model_, prompt_, {.max_new_tokens = 3, .top_logprobs = 4}, 0);
  ASSERT_EQ(out.top_logprobs.size(), 3u);
  const at::Tensor expected = next_logits(prompt_).log_softmax(-1);
  const auto& first = out.top_logprobs[0];
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(first[0].token_id, out.tokens[0]);
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_NEAR(first[i].logprob, expected[first[i].token_id].item<double>(), 1e-12);
    if (i > 0) {
      EXPECT_LE(first[i].logprob, first[i - 1].logprob);
    }
  }
}

TEST_F(Oracle, OneTeacherForcedPassGivesTheLogprobsItRecordsAsItDecodes) {
  const SequenceResult out = oracle_generate(
      model_, prompt_, {.max_new_tokens = 9, .sampling = {.temperature = 1.0, .seed = 3}, .top_logprobs = 4}, 2);
  const GeneratedLogprobs forced = oracle_generated_logprobs(model_, prompt_, out.tokens, 4);
  ASSERT_EQ(forced.top.size(), out.top_logprobs.size());
  ASSERT_EQ(forced.chosen.size(), out.tokens.size());
  std::vector<int64_t> context = prompt_;
  for (size_t i = 0; i < forced.top.size(); ++i) {
    ASSERT_EQ(forced.top[i].size(), 4u);
    for (size_t j = 0; j < 4; ++j) {
      EXPECT_EQ(forced.top[i][j].token_id, out.top_logprobs[i][j].token_id) << "token " << i;
      EXPECT_NEAR(forced.top[i][j].logprob, out.top_logprobs[i][j].logprob, 1e-12) << "token " << i;
    }
    EXPECT_NEAR(forced.chosen[i], next_logits(context).log_softmax(-1)[out.tokens[i]].item<double>(), 1e-12)
        << "token " << i << " itself";
    context.push_back(out.tokens[i]);
  }
  EXPECT_TRUE(oracle_generated_logprobs(model_, prompt_, {}, 4).top.empty());
}

TEST_F(Oracle, PromptLogprobsGiveEachPromptTokenItselfThenTheMostLikely) {
  const std::vector<std::vector<TokenLogprob>> prompt = oracle_prompt_logprobs(model_, prompt_, 3);
  ASSERT_EQ(prompt.size(), prompt_.size() - 1);
  for (size_t i = 0; i < prompt.size(); ++i) {
    const std::vector<int64_t> context(prompt_.begin(), prompt_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    const at::Tensor expected = next_logits(context).log_softmax(-1);
    ASSERT_GE(prompt[i].size(), 3u);
    ASSERT_LE(prompt[i].size(), 4u);
    EXPECT_EQ(prompt[i][0].token_id, prompt_[i + 1]);
    for (const TokenLogprob& a : prompt[i]) EXPECT_NEAR(a.logprob, expected[a.token_id].item<double>(), 1e-12) << "token " << i;
    const auto [best, best_id] = expected.max(0);
    const bool listed = std::any_of(prompt[i].begin(), prompt[i].end(), [&](const TokenLogprob& a) { return a.token_id == best_id.item<int64_t>(); });
    EXPECT_TRUE(listed) << "token " << i << ": the most likely token is not among the alternatives";
  }
  EXPECT_TRUE(oracle_prompt_logprobs(model_, std::vector<int64_t>{5}, 3).empty());
}

TEST_F(Oracle, SeededSamplingIsReproduciblePerSequence) {
  const OracleOptions options{.max_new_tokens = 16, .sampling = {.temperature = 1.0, .top_k = 50, .seed = 3}};
  const SequenceResult a = oracle_generate(model_, prompt_, options, 4);
  EXPECT_EQ(a.tokens, oracle_generate(model_, prompt_, options, 4).tokens);
  EXPECT_NE(a.tokens, oracle_generate(model_, prompt_, options, 5).tokens);
  OracleOptions reseeded = options;
  reseeded.sampling.seed = 4;
  EXPECT_NE(a.tokens, oracle_generate(model_, prompt_, reseeded, 4).tokens);
  EXPECT_NE(a.tokens, oracle_generate(model_, prompt_, {.max_new_tokens = 16}, 4).tokens);
}

TEST_F(Oracle, TopKOneSamplingIsGreedy) {
  const SequenceResult greedy = oracle_generate(model_, prompt_, {.max_new_tokens = 8}, 0);
  const SequenceResult top1 = oracle_generate(model_, prompt_, {.max_new_tokens = 8, .sampling = {.temperature = 0.8, .top_k = 1, .seed = 9}}, 0);
  EXPECT_EQ(greedy.tokens, top1.tokens);
}

}  // namespace
}  // namespace specgate
