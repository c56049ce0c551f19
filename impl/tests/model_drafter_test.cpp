// Model drafting on hand-built batches of unequal rows: greedy drafts are each row's own greedy
// continuation under the draft model alone, sampled drafts come from each row's own stream
// whatever its batch, and a script replaces the model's choices while the model still runs.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "impl/decoding/batch_tensors.h"
#include "impl/decoding/model_drafter.h"
#include "impl/model/kv_cache.h"
#include "impl/tests/decoding_test_support.h"
#include "impl/tests/tensor_test_support.h"

namespace specgate {
namespace {

using test_support::models;

constexpr int64_t kDrafts = 4;

const std::vector<SequenceRequest> kRequests = {
    {.sequence_index = 3, .prompt = {40, 41}},
    {.sequence_index = 4, .prompt = {50, 51, 52, 53, 54, 55}},
    {.sequence_index = 5, .prompt = {60, 61, 62, 63}},
};

// The rows of `requests` holding their prompts, left-padded to the longest.
BatchState prompts(const std::vector<SequenceRequest>& requests, const DecodeOptions& options) {
  BatchState state;
  for (const SequenceRequest& request : requests) {
    state.rows.emplace_back(request, options);
    state.width = std::max(state.width, state.rows.back().content());
  }
  for (size_t i = 0; i < state.rows.size(); ++i) state.rows[i].position_padding = state.padding(i);
  return state;
}

struct Drafted {
  DraftProposal proposal;
  int64_t cache_length_after_start = 0, cache_length = 0;
};

Drafted draft(const std::vector<SequenceRequest>& requests, const DecodeOptions& options,
              const ScriptedDrafts* script = nullptr) {
  BatchState state = prompts(requests, options);
  ModelDrafter drafter(models().draft, script);
  KVCache cache = models().draft.make_cache(state.batch_size(), state.width + kDrafts);
  models().draft.forward(tokens_at(state, 0, state.width, at::kCPU), positions_at(state, 0, state.width, at::kCPU),
                         key_valid(state, state.width, at::kCPU), &cache);
  for (size_t i = 0; i < state.rows.size(); ++i) state.rows[i].draft_slots = {state.padding(i), state.rows[i].content()};
  Drafted out{.cache_length_after_start = cache.length()};
  out.proposal = drafter.propose(state, kDrafts, options, &cache);
  out.cache_length = cache.length();
  return out;
}

using test_support::row_of;

TEST(ModelDrafter, GreedyDraftsAreEachRowsOwnGreedyContinuation) {
  const DecodeOptions options;
  const Drafted drafted = draft(kRequests, options);
  ASSERT_EQ(drafted.proposal.tokens.sizes(), (at::IntArrayRef{3, kDrafts}));
  EXPECT_FALSE(drafted.proposal.distributions.defined()) << "greedy drafts record no distribution";
  for (size_t i = 0; i < kRequests.size(); ++i) {
    const OracleOptions alone{.max_new_tokens = kDrafts, .top_logprobs = 0};
    EXPECT_EQ(row_of(drafted.proposal.tokens, i),
              oracle_generate(models().draft, kRequests[i].prompt, alone, kRequests[i].sequence_index).tokens)
        << "row " << i;
  }
  // The prompts cached whole; then the pending token is fed again and every draft but the last.
  EXPECT_EQ(drafted.cache_length_after_start, 6);
  EXPECT_EQ(drafted.cache_length, 6 + kDrafts - 1);
}

TEST(ModelDrafter, SampledDraftsComeFromEachRowsOwnStreamWhateverItsBatch) {
  DecodeOptions options;
  options.sampling = {.temperature = 0.9, .top_k = 20, .seed = 3};
  const Drafted together = draft(kRequests, options);
  const at::Tensor& q = together.proposal.distributions;
  ASSERT_EQ(q.sizes(), (at::IntArrayRef{3, kDrafts, models().draft.config().vocab_size}));
  EXPECT_TRUE(at::allclose(q.sum(-1), at::ones({3, kDrafts}, q.options()), 0, 1e-12));
  EXPECT_TRUE(q.gt(0).sum(-1).le(20).all().item<bool>()) << "top-k leaves at most 20 tokens";
  const at::Tensor drawn = q.gather(2, together.proposal.tokens.unsqueeze(2)).squeeze(2);
  EXPECT_TRUE(drawn.gt(0).all().item<bool>()) << "every draft has mass where it was drawn from";
  for (size_t i = 0; i < kRequests.size(); ++i) {
    const Drafted alone = draft({kRequests[i]}, options);
    EXPECT_EQ(row_of(together.proposal.tokens, i), row_of(alone.proposal.tokens, 0)) << "row " << i;
  }
}

TEST(ModelDrafter, AScriptReplacesTheModelsChoicesWhileTheModelRuns) {
  const DecodeOptions options;
  const ScriptedDrafts script{.continuations = {{3, {7, 8, 9, 10}}, {4, {11, 12, 13, 14}}, {5, {15, 16, 17, 18}}},
                              .script = [](int64_t sequence, int64_t) { return sequence == 4 ? 4 : 1; },
                              .vocab_size = models().draft.config().vocab_size};
  const Drafted drafted = draft(kRequests, options, &script);
  EXPECT_TRUE(drafted.proposal.tokens.equal(script.tokens(prompts(kRequests, options), kDrafts)));
  EXPECT_EQ(row_of(drafted.proposal.tokens, 1), (std::vector<int64_t>{11, 12, 13, 14}));
  EXPECT_EQ(drafted.cache_length, 6 + kDrafts - 1) << "the model fed the scripted tokens";
}

}  // namespace
}  // namespace specgate
