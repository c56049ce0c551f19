// Each dialect against response bodies written by hand in the shape its engine's source
// produces (the file named above each body), and the request fields each engine reads.
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "conformance/collect/dialect.h"
#include "conformance/collect/http_client.h"
#include "conformance/collect/server_counters.h"
#include "impl/common/error.h"

namespace specgate::cli {
namespace {

using nlohmann::json;

CompletionRequest greedy_ids() {
  return {.model = "m", .prompt_ids = std::vector<int64_t>{1, 15, 16}, .prompt_text = "Hi", .max_new_tokens = 4,
          .top_logprobs = 2};
}

std::string malformed(const Dialect& dialect, const std::string& body) {
  try {
    dialect.parse_response(body);
  } catch (const MalformedResponse& e) {
    return e.what();
  }
  return "no error";
}

// vllm/entrypoints/openai/protocol.py: CompletionResponse{id, object, created, model,
// choices: [CompletionResponseChoice{index, text, logprobs: CompletionLogProbs{text_offset,
// token_logprobs, tokens, top_logprobs}, finish_reason, stop_reason, token_ids,
// prompt_logprobs, prompt_token_ids}], usage: UsageInfo}; with return_tokens_as_token_ids the
// tokens and top_logprobs keys read "token_id:<id>" (serving_engine.py _get_decoded_token).
constexpr const char* kVllmResponse = R"({
  "id": "cmpl-8e1d", "object": "text_completion", "created": 1732300000, "model": "m",
  "choices": [{"index": 0, "text": " the cat",
    "logprobs": {"text_offset": [0, 4], "token_logprobs": [-0.25, -1.5], "tokens": ["token_id:279", "token_id:8415"],
                 "top_logprobs": [{"token_id:279": -0.25, "token_id:264": -1.75},
                                  {"token_id:5679": -1.25, "token_id:8415": -1.5}]},
    "finish_reason": "length", "stop_reason": null, "token_ids": [279, 8415], "prompt_logprobs": null,
    "prompt_token_ids": [1, 15, 16]}],
  "service_tier": null, "system_fingerprint": null,
  "usage": {"prompt_tokens": 3, "total_tokens": 5, "completion_tokens": 2, "prompt_tokens_details": null},
  "kv_transfer_params": null})";

TEST(VllmDialect, AsksForTokenIdsAndReadsThem) {
  const auto dialect = dialect_from_name("vllm");
  EXPECT_EQ(dialect->path(), "/v1/completions");
  const json request = json::parse(dialect->request_body(greedy_ids()));
  EXPECT_EQ(request["prompt"], json::array({1, 15, 16}));
  EXPECT_EQ(request["max_tokens"], 4);
  EXPECT_EQ(request["temperature"], 0.0);
  EXPECT_EQ(request["return_token_ids"], true);
  EXPECT_EQ(request["logprobs"], 2);
  EXPECT_EQ(request["return_tokens_as_token_ids"], true);
  EXPECT_FALSE(request.contains("top_k")) << "sampling flags are sent only when given";

  const Completion c = dialect->parse_response(kVllmResponse);
  EXPECT_EQ(c.text, " the cat");
  EXPECT_EQ(c.token_ids, (std::vector<int64_t>{279, 8415}));
  EXPECT_EQ(c.prompt_token_ids, (std::vector<int64_t>{1, 15, 16}));
  ASSERT_EQ(c.top_logprobs.size(), 2u);
  EXPECT_EQ(c.top_logprobs[1][0].token_id, 5679) << "a JSON object's keys promise no order: sorted";
  EXPECT_DOUBLE_EQ(c.top_logprobs[1][1].logprob, -1.5);
  EXPECT_EQ(c.chosen_logprobs, (std::vector<std::optional<double>>{-0.25, -1.5})) << "token_logprobs";
  const AlternativesListing listing = dialect->alternatives_listing();
  EXPECT_EQ(listing.order, AlternativesListing::Order::kNone);
  EXPECT_EQ(listing.beyond_asked, 1) << "the chosen token beside the k most likely";
  json null_chosen = json::parse(kVllmResponse);
  null_chosen["choices"][0]["logprobs"]["token_logprobs"][0] = nullptr;
  EXPECT_EQ(dialect->parse_response(null_chosen.dump()).chosen_logprobs[0], std::nullopt);
  null_chosen["choices"][0]["logprobs"]["token_logprobs"].erase(1);
  EXPECT_EQ(malformed(*dialect, null_chosen.dump()), "field 'choices[0].logprobs.token_logprobs': has 1 entries for 2 tokens");
  json no_ids = json::parse(kVllmResponse);
  no_ids["choices"][0].erase("token_ids");
  EXPECT_EQ(malformed(*dialect, no_ids.dump()),
            "field 'choices[0].token_ids': missing (vLLM 0.10.2 and later return it for return_token_ids)");
  json text_keys = json::parse(kVllmResponse);
  text_keys["choices"][0]["logprobs"]["top_logprobs"][0] = {{" the", -0.25}};
  EXPECT_EQ(malformed(*dialect, text_keys.dump()),
            "field 'choices[0].logprobs.top_logprobs[0]. the': expected a token token_id:<id> (return_tokens_as_token_ids), got ' the'");
}

// What no answer can be: check_completion's refusals, whatever the dialect parsed.
std::string impossible(const Completion& completion, int64_t max_new_tokens, const CompletionChecks& checks = {}) {
  try {
    check_completion(completion, CompletionRequest{.max_new_tokens = max_new_tokens}, checks);
  } catch (const MalformedResponse& e) {
    return e.what();
  }
  return "accepted";
}

TEST(CheckCompletion, RefusesCountsAndIdsNoAnswerCanHave) {
  EXPECT_EQ(impossible({.token_ids = std::vector<int64_t>{1, 2, 3}, .new_tokens = 3}, 8), "accepted");
  EXPECT_EQ(impossible({.token_ids = std::vector<int64_t>{1, 2, 3}, .new_tokens = 999}, 8),
            "field 'completion_tokens': the server counts 999 tokens, but gave 3 token ids");
  EXPECT_EQ(impossible({.token_ids = std::vector<int64_t>{1, int64_t{1} << 62}}, 8),
            "field 'token_ids[1]': token id 4611686018427387904 is beyond any vocabulary");
  EXPECT_EQ(impossible({.token_ids = std::vector<int64_t>(9, 1)}, 8), "field 'token_ids': 9 tokens, more than the 8 asked");
  EXPECT_EQ(impossible({.new_tokens = 999}, 8), "field 'completion_tokens': 999 tokens, more than the 8 asked");
  EXPECT_EQ(impossible({.token_ids = std::vector<int64_t>{1}, .prompt_token_ids = {int64_t{1} << 40}}, 8),
            "field 'prompt_token_ids[0]': token id 1099511627776 is beyond any vocabulary");

  const CompletionChecks fixture{.vocabulary = 259};
  EXPECT_EQ(impossible({.token_ids = std::vector<int64_t>{1, 2147483647}}, 8, fixture),
            "field 'token_ids[1]': token id 2147483647 is beyond the model's vocabulary of 259");
  EXPECT_EQ(impossible({.token_ids = std::vector<int64_t>{1}, .prompt_token_ids = {259}}, 8, fixture),
            "field 'prompt_token_ids[0]': token id 259 is beyond the model's vocabulary of 259");
  EXPECT_EQ(impossible({.token_ids = std::vector<int64_t>{1}, .top_logprobs = {{{300, -1.0}}}}, 8, fixture),
            "field 'top_logprobs[0]': token id 300 is beyond the model's vocabulary of 259");
  EXPECT_EQ(impossible({.token_ids = std::vector<int64_t>{258}}, 8, fixture), "accepted");
}

TEST(CheckCompletion, RefusesFiguresBesideTheTokensThatCannotBeUnlessTheCallerJudgesThem) {
  const Completion positive{.token_ids = std::vector<int64_t>{1}, .top_logprobs = {{{1, 5.0}}}};
  EXPECT_EQ(impossible(positive, 8), "field 'top_logprobs[0]': log-probability 5.000000 is above 0");
  EXPECT_EQ(impossible({.token_ids = std::vector<int64_t>{1}, .chosen_logprobs = {1e308}}, 8),
            "field 'token_logprobs[0]': log-probability " + std::to_string(1e308) + " is above 0");
  EXPECT_EQ(impossible({.token_ids = std::vector<int64_t>{1}, .top_logprobs = {{{1, 2e-7}}}}, 8), "accepted")
      << "float32's rounding of a certain token";
  const Completion empty{.token_ids = std::vector<int64_t>{}, .finish_reason = "length"};
  EXPECT_EQ(impossible(empty, 8), "field 'finish_reason': length, with no tokens though 8 were asked");
  const Completion beyond{.token_ids = std::vector<int64_t>{300}};
  EXPECT_EQ(impossible(beyond, 8, {.vocabulary = 259}), "field 'token_ids[0]': token id 300 is beyond the model's vocabulary of 259");
  EXPECT_EQ(impossible(beyond, 8, {.reports = false, .vocabulary = 259}), "accepted") << "differential's findings";
  for (const Completion& judged_elsewhere : {positive, empty})
    EXPECT_EQ(impossible(judged_elsewhere, 8, {.reports = false}), "accepted") << "differential's findings";
}

TEST(OpenaiDialect, ReadsTextAndTheUsageCount) {
  const auto dialect = dialect_from_name("openai");
  EXPECT_FALSE(dialect->gives_token_ids());
  const json request = json::parse(dialect->request_body(greedy_ids()));
  EXPECT_FALSE(request.contains("return_token_ids"));
  const Completion c = dialect->parse_response(kVllmResponse);
  EXPECT_EQ(c.text, " the cat");
  EXPECT_FALSE(c.token_ids.has_value());
  EXPECT_EQ(c.new_tokens, 2);
  EXPECT_EQ(malformed(*dialect, R"({"choices": []})"), "field 'choices[0]': missing");
  EXPECT_EQ(malformed(*dialect, R"({"choices": [{"text": 3}]})"), "field 'choices[0].text': expected a string, got number 3");
  EXPECT_EQ(malformed(*dialect, R"({"choices": [)").substr(0, 38), "field '(body)': invalid JSON at line 1");
}

// sgl-project/sglang, the response of POST /generate built in
// python/sglang/srt/managers/tokenizer_manager.py (_handle_batch_output and
// _calculate_spec_decoding_metrics): {"text", "output_ids", "meta_info": {"id", "finish_reason",
// "prompt_tokens", "completion_tokens", "cached_tokens", "output_token_logprobs": [(logprob,
// token_id, text)], "output_top_logprobs": [[(logprob, token_id, text)]], "spec_accept_rate",
// "spec_accept_length", "spec_verify_ct", "spec_accept_token_num", "spec_draft_token_num",
// "e2e_latency"}}: the speculative keys as a response quoted in sgl-project/sglang pull request
// 13754 carries them; BatchTokenIDOutput.spec_verify_ct in io_struct.py at commit
// 0e7d7969d50db2ce9c2d28926aa68dfa41e674b7. Pull request 23530 renamed the draft counts
// spec_num_correct_drafts and spec_num_proposed_drafts (quoted in pull request 33518's
// response). sampling_params.sampling_seed: docs/advanced_features/deterministic_inference.md at
// commit f1112485bc2118cbf5adcc7cc21e35244c2ae518.
constexpr const char* kSglangResponse = R"({
  "text": " the cat", "output_ids": [279, 8415],
  "meta_info": {"id": "a1b2", "finish_reason": {"type": "length", "length": 2}, "prompt_tokens": 3,
    "completion_tokens": 2, "cached_tokens": 0,
    "output_token_logprobs": [[-0.25, 279, null], [-1.5, 8415, null]],
    "output_top_logprobs": [[[-0.25, 279, null], [-1.75, 264, null]], [[-1.25, 5679, null], [-1.5, 8415, null]]],
    "spec_accept_rate": 0.25, "spec_accept_length": 2.0, "spec_verify_ct": 1, "spec_accept_token_num": 1,
    "spec_draft_token_num": 4, "e2e_latency": 0.05}})";

TEST(SglangDialect, SendsInputIdsAndReadsOutputIdsLogprobsAndVerifications) {
  const auto dialect = dialect_from_name("sglang");
  EXPECT_EQ(dialect->path(), "/generate");
  const json request = json::parse(dialect->request_body(greedy_ids()));
  EXPECT_EQ(request["input_ids"], json::array({1, 15, 16}));
  EXPECT_EQ(request["sampling_params"]["max_new_tokens"], 4);
  EXPECT_EQ(request["sampling_params"]["temperature"], 0.0);
  EXPECT_EQ(request["return_logprob"], true);
  EXPECT_EQ(request["top_logprobs_num"], 2);
  EXPECT_EQ(request["logprob_start_len"], -1);

  EXPECT_FALSE(request["sampling_params"].contains("sampling_seed"));
  CompletionRequest seeded = greedy_ids();
  seeded.seed = 7;
  EXPECT_EQ(json::parse(dialect->request_body(seeded))["sampling_params"]["sampling_seed"], 7);

  const Completion c = dialect->parse_response(kSglangResponse);
  EXPECT_EQ(c.token_ids, (std::vector<int64_t>{279, 8415}));
  EXPECT_EQ(c.target_passes, 1);
  EXPECT_EQ(c.drafted_tokens, 4);
  EXPECT_EQ(c.accepted_drafts, 1);
  json renamed = json::parse(kSglangResponse);
  renamed["meta_info"].erase("spec_accept_token_num");
  renamed["meta_info"].erase("spec_draft_token_num");
  renamed["meta_info"]["spec_num_correct_drafts"] = 3;
  renamed["meta_info"]["spec_num_proposed_drafts"] = 5;
  const Completion newer = dialect->parse_response(renamed.dump());
  EXPECT_EQ(newer.drafted_tokens, 5);
  EXPECT_EQ(newer.accepted_drafts, 3) << "the names since pull request 23530";
  renamed["meta_info"]["spec_num_correct_drafts"] = 6;
  EXPECT_EQ(malformed(*dialect, renamed.dump()), "field 'meta_info': more accepted draft tokens than drafted ones");
  json plain = json::parse(kSglangResponse);
  for (const char* key : {"spec_accept_rate", "spec_accept_length", "spec_verify_ct", "spec_accept_token_num", "spec_draft_token_num"})
    plain["meta_info"].erase(key);
  const Completion without_speculation = dialect->parse_response(plain.dump());
  EXPECT_FALSE(without_speculation.target_passes.has_value());
  EXPECT_FALSE(without_speculation.drafted_tokens.has_value());
  EXPECT_FALSE(without_speculation.accepted_drafts.has_value());
  ASSERT_EQ(c.top_logprobs.size(), 2u);
  EXPECT_EQ(c.top_logprobs[0][1].token_id, 264);
  EXPECT_DOUBLE_EQ(c.top_logprobs[0][1].logprob, -1.75);
  EXPECT_EQ(c.chosen_logprobs, (std::vector<std::optional<double>>{-0.25, -1.5})) << "output_token_logprobs";
  EXPECT_EQ(dialect->alternatives_listing().order, AlternativesListing::Order::kMostLikelyFirst);
  json other_token = json::parse(kSglangResponse);
  other_token["meta_info"]["output_token_logprobs"][1][1] = 5679;
  EXPECT_EQ(malformed(*dialect, other_token.dump()), "field 'meta_info.output_token_logprobs[1]': names token 5679, output_ids token 8415");
  json without_ids = json::parse(kSglangResponse);
  without_ids.erase("output_ids");
  EXPECT_EQ(dialect->parse_response(without_ids.dump()).token_ids, (std::vector<int64_t>{279, 8415}))
      << "older SGLang: the ids of output_token_logprobs";
  json bad = json::parse(kSglangResponse);
  bad["meta_info"]["output_top_logprobs"].erase(1);
  EXPECT_EQ(malformed(*dialect, bad.dump()), "field 'meta_info.output_top_logprobs': has 1 entries for 2 tokens");
}

// http_server.py's generate_request streams when GenerateReqInput.stream is set, on the same
// route.
TEST(SglangDialect, AsksForAStreamOnTheSameRoute) {
  const auto dialect = dialect_from_name("sglang");
  CompletionRequest request = greedy_ids();
  EXPECT_EQ(json::parse(dialect->request_body(request))["stream"], false);
  request.stream = true;
  EXPECT_EQ(json::parse(dialect->request_body(request))["stream"], true);
  EXPECT_TRUE(dialect->ends_streams_with_done());
  EXPECT_EQ(dialect->stream_path(), "/generate");
}

// The prompt's log-probabilities, as tokenizer_manager.py's convert_logprob_style lists them from
// logprob_start_len: input_token_logprobs one triple per prompt token (the first's log-probability
// null), input_top_logprobs the top k of each (the first null). Each triple's text is null unless
// the request asks for return_text_in_logprobs (detokenize_logprob_tokens, sgl-project/sglang at
// commit 001067fffe33427bee0ed2f007fb7551a1d76b44), as here.
TEST(SglangDialect, ReadsThePromptsLogprobs) {
  const auto dialect = dialect_from_name("sglang");
  CompletionRequest request = greedy_ids();
  request.prompt_logprobs = 2;
  const json body = json::parse(dialect->request_body(request));
  EXPECT_EQ(body["logprob_start_len"], 0);
  EXPECT_EQ(body["top_logprobs_num"], 2);
  EXPECT_EQ(body["return_logprob"], true);
  const Completion completion = dialect->parse_response(R"({"text": "a", "output_ids": [5], "meta_info": {
    "finish_reason": {"type": "length", "length": 1},
    "input_token_logprobs": [[null, 1, null], [-0.5, 7, null], [-3.0, 9, null]],
    "input_top_logprobs": [null, [[-0.5, 7, null], [-1.5, 8, null]], [[-0.25, 4, null], [-2.0, 6, null]]]}})");
  EXPECT_EQ(completion.prompt_token_ids, (std::vector<int64_t>{1, 7, 9}));
  ASSERT_EQ(completion.prompt_logprobs.size(), 2u);
  EXPECT_EQ(completion.prompt_logprobs[0].size(), 2u);  // the token itself among its top 2
  ASSERT_EQ(completion.prompt_logprobs[1].size(), 3u);  // the token itself added beside them
  EXPECT_EQ(completion.prompt_logprobs[1][2].token_id, 9);
  EXPECT_EQ(completion.prompt_logprobs[1][2].logprob, -3.0);
}

// ggml-org/llama.cpp tools/server/server-task.cpp at commit
// 00efb3e184262872916bf136b3df63c1822a19bd: server_task_result_cmpl_final::to_json_non_oaicompat
// {index, content, tokens, id_slot, stop, model, tokens_predicted, tokens_evaluated,
// generation_settings, prompt, has_new_line, truncated, stop_type, stopping_word, tokens_cached,
// timings, completion_probabilities}; completion_token_output::probs_vector_to_json {id, token,
// bytes, logprob, top_logprobs: [{id, token, bytes, logprob}]}; result_timings::to_json
// {cache_n, prompt_n, prompt_ms, prompt_per_token_ms, prompt_per_second, predicted_n,
// predicted_ms, predicted_per_token_ms, predicted_per_second}, plus draft_n and
// draft_n_accepted only when draft_n > 0.
constexpr const char* kLlamacppResponse = R"({
  "index": 0, "content": " the cat sat", "tokens": [279, 8415, 7731], "id_slot": 0, "stop": true, "model": "m",
  "tokens_predicted": 3, "tokens_evaluated": 3, "generation_settings": {"n_predict": 4}, "prompt": "<s>Hi",
  "has_new_line": false, "truncated": false, "stop_type": "limit", "stopping_word": "", "tokens_cached": 5,
  "timings": {"cache_n": 0, "prompt_n": 3, "prompt_ms": 1.5, "prompt_per_token_ms": 0.5, "prompt_per_second": 2000.0,
              "predicted_n": 3, "predicted_ms": 6.0, "predicted_per_token_ms": 2.0, "predicted_per_second": 500.0,
              "draft_n": 4, "draft_n_accepted": 2},
  "completion_probabilities": [
    {"id": 279, "token": " the", "bytes": [32, 116, 104, 101], "logprob": -0.25,
     "top_logprobs": [{"id": 279, "token": " the", "bytes": [32, 116, 104, 101], "logprob": -0.25},
                      {"id": 264, "token": " a", "bytes": [32, 97], "logprob": -1.75}]},
    {"id": 8415, "token": " cat", "bytes": [32, 99, 97, 116], "logprob": -1.5,
     "top_logprobs": [{"id": 5679, "token": " dog", "bytes": [32, 100, 111, 103], "logprob": -1.25}]},
    {"id": 7731, "token": " sat", "bytes": [32, 115, 97, 116], "logprob": -0.5, "top_logprobs": []}]})";

TEST(LlamacppDialect, SendsPromptIdsWithNeutralSamplersAndReadsTokensAndDrafts) {
  const auto dialect = dialect_from_name("llamacpp");
  EXPECT_EQ(dialect->path(), "/completion");
  const json request = json::parse(dialect->request_body(greedy_ids()));
  EXPECT_EQ(request["prompt"], json::array({1, 15, 16}));
  EXPECT_EQ(request["n_predict"], 4);
  EXPECT_EQ(request["n_probs"], 2);
  EXPECT_EQ(request["return_tokens"], true);
  EXPECT_EQ(request["cache_prompt"], false);
  EXPECT_EQ(request["top_k"], 0);
  EXPECT_EQ(request["min_p"], 0.0);

  const Completion c = dialect->parse_response(kLlamacppResponse);
  EXPECT_EQ(c.text, " the cat sat");
  EXPECT_EQ(c.token_ids, (std::vector<int64_t>{279, 8415, 7731}));
  EXPECT_EQ(c.drafted_tokens, 4);
  EXPECT_EQ(c.accepted_drafts, 2);
  EXPECT_EQ(c.target_passes, 1) << "3 tokens, 2 of them accepted drafts: one pass";
  json plain = json::parse(kLlamacppResponse);
  plain["timings"].erase("draft_n");
  plain["timings"].erase("draft_n_accepted");
  const Completion without_drafts = dialect->parse_response(plain.dump());
  EXPECT_FALSE(without_drafts.drafted_tokens.has_value()) << "no draft_n: no speculative decoding";
  EXPECT_FALSE(without_drafts.target_passes.has_value());
  ASSERT_EQ(c.top_logprobs.size(), 3u);
  EXPECT_EQ(c.top_logprobs[0][1].token_id, 264);
  EXPECT_TRUE(c.top_logprobs[2].empty());
  EXPECT_EQ(c.chosen_logprobs, (std::vector<std::optional<double>>{-0.25, -1.5, -0.5})) << "completion_probabilities[i].logprob";
  EXPECT_EQ(dialect->alternatives_listing().order, AlternativesListing::Order::kMostLikelyFirst);
  json other_token = json::parse(kLlamacppResponse);
  other_token["completion_probabilities"][2]["id"] = 5;
  EXPECT_EQ(malformed(*dialect, other_token.dump()), "field 'completion_probabilities[2].id': token 5, tokens has 7731");
  json bad = json::parse(kLlamacppResponse);
  bad["completion_probabilities"][1]["top_logprobs"][0].erase("logprob");
  EXPECT_EQ(malformed(*dialect, bad.dump()), "field 'completion_probabilities[1].top_logprobs[0].logprob': missing");
  bad = json::parse(kLlamacppResponse);
  bad.erase("tokens");
  EXPECT_EQ(malformed(*dialect, bad.dump()), "field 'tokens': missing");
}

// router/src/lib.rs: GenerateResponse{generated_text, details: Details{finish_reason,
// generated_tokens, seed, prefill: [PrefillToken{id, text, logprob}], tokens: [Token{id, text,
// logprob, special}], top_tokens: [[Token]]}}.
constexpr const char* kTgiResponse = R"({
  "generated_text": " the cat",
  "details": {"finish_reason": "length", "generated_tokens": 2, "seed": null,
    "prefill": [{"id": 1, "text": "<s>", "logprob": null}, {"id": 15, "text": "H", "logprob": -3.0},
                {"id": 16, "text": "i", "logprob": -2.0}],
    "tokens": [{"id": 279, "text": " the", "logprob": -0.25, "special": false},
               {"id": 8415, "text": " cat", "logprob": -1.5, "special": false}],
    "top_tokens": [[{"id": 279, "text": " the", "logprob": -0.25, "special": false},
                    {"id": 264, "text": " a", "logprob": -1.75, "special": false}],
                   [{"id": 5679, "text": " dog", "logprob": -1.25, "special": false},
                    {"id": 8415, "text": " cat", "logprob": -1.5, "special": false}]]}})";

TEST(TgiDialect, SendsTextWithDetailsAndReadsTokensPrefillAndTopTokens) {
  const auto dialect = dialect_from_name("tgi");
  EXPECT_FALSE(dialect->takes_token_ids());
  const json request = json::parse(dialect->request_body(greedy_ids()));
  EXPECT_EQ(request["inputs"], "Hi");
  EXPECT_EQ(request["parameters"]["do_sample"], false);
  EXPECT_FALSE(request["parameters"].contains("temperature")) << "TGI refuses a temperature of 0";
  EXPECT_EQ(request["parameters"]["details"], true);
  EXPECT_EQ(request["parameters"]["decoder_input_details"], true);
  EXPECT_EQ(request["parameters"]["top_n_tokens"], 2);

  const Completion c = dialect->parse_response(kTgiResponse);
  EXPECT_EQ(c.token_ids, (std::vector<int64_t>{279, 8415}));
  EXPECT_EQ(c.prompt_token_ids, (std::vector<int64_t>{1, 15, 16}));
  EXPECT_EQ(c.top_logprobs[1][0].token_id, 5679);
  EXPECT_EQ(c.chosen_logprobs, (std::vector<std::optional<double>>{-0.25, -1.5})) << "details.tokens[i].logprob";
  EXPECT_TRUE(dialect->alternatives_listing().ties_extend) << "batch_top_tokens keeps every token tied with the last";
  json masked = json::parse(kTgiResponse);
  masked["details"]["tokens"][1]["logprob"] = nullptr;  // -inf, which serde_json writes as null
  EXPECT_EQ(dialect->parse_response(masked.dump()).chosen_logprobs[1], std::nullopt);
  EXPECT_EQ(malformed(*dialect, R"({"generated_text": "x"})"), "field 'details': missing");
}

// router/src/server.rs: /generate answers whole whatever the request says; /generate_stream
// takes the same GenerateRequest and refuses decoder_input_details (PrefillDetailsStream).
TEST(TgiDialect, StreamsFromGenerateStreamWithoutPrefillDetails) {
  const auto dialect = dialect_from_name("tgi");
  CompletionRequest request = greedy_ids();
  request.stream = true;
  const json streamed = json::parse(dialect->request_body(request));
  EXPECT_EQ(streamed["parameters"]["details"], true) << "the last event's finish_reason and count";
  EXPECT_EQ(streamed["parameters"]["decoder_input_details"], false);
  EXPECT_FALSE(streamed.contains("stream"));
  EXPECT_EQ(dialect->path(), "/generate");
  EXPECT_EQ(dialect->stream_path(), "/generate_stream");
  EXPECT_FALSE(dialect->ends_streams_with_done());
}

CompletionRequest conversation() {
  CompletionRequest request = greedy_ids();
  request.prompt_ids.reset();
  request.messages = {{"user", "Hi"}, {"assistant", "Hello."}, {"user", "Again"}};
  return request;
}

// vllm/entrypoints/openai/protocol.py: ChatCompletionResponse{id, object, created, model,
// choices: [ChatCompletionResponseChoice{index, message: ChatMessage{role, content, reasoning,
// tool_calls}, logprobs: ChatCompletionLogProbs{content: [{token, logprob, bytes, top_logprobs:
// [{token, logprob, bytes}]}]}, finish_reason, stop_reason, token_ids}], usage, prompt_logprobs,
// prompt_token_ids, kv_transfer_params}.
constexpr const char* kVllmChatResponse = R"({
  "id": "chatcmpl-1f", "object": "chat.completion", "created": 1732300000, "model": "m",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": " the cat", "reasoning": null, "tool_calls": []},
    "logprobs": {"content": [
      {"token": "token_id:279", "logprob": -0.25, "bytes": [116],
       "top_logprobs": [{"token": "token_id:279", "logprob": -0.25, "bytes": [116]},
                        {"token": "token_id:264", "logprob": -1.75, "bytes": [97]}]},
      {"token": "token_id:8415", "logprob": -1.5, "bytes": [99],
       "top_logprobs": [{"token": "token_id:8415", "logprob": -1.5, "bytes": [99]},
                        {"token": "token_id:5679", "logprob": -1.25, "bytes": [100]}]}]},
    "finish_reason": "length", "stop_reason": null, "token_ids": [279, 8415]}],
  "service_tier": null, "system_fingerprint": null,
  "usage": {"prompt_tokens": 9, "total_tokens": 11, "completion_tokens": 2},
  "prompt_logprobs": null, "prompt_token_ids": [1, 15, 16, 17, 18, 19, 20, 21, 22], "kv_transfer_params": null})";

TEST(VllmChatDialect, SendsMessagesAndReadsTokenIdsPromptIdsAndTopLogprobs) {
  const auto dialect = dialect_from_name("vllm-chat");
  EXPECT_EQ(dialect->path(), "/v1/chat/completions");
  EXPECT_TRUE(dialect->takes_messages());
  EXPECT_FALSE(dialect->takes_token_ids());
  const json request = json::parse(dialect->request_body(conversation()));
  EXPECT_EQ(request["messages"], json::parse(R"([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
                                                 {"role": "user", "content": "Again"}])"));
  EXPECT_FALSE(request.contains("prompt"));
  EXPECT_EQ(request["max_tokens"], 4);
  EXPECT_EQ(request["return_token_ids"], true);
  EXPECT_EQ(request["logprobs"], true);
  EXPECT_EQ(request["top_logprobs"], 2);
  EXPECT_EQ(request["return_tokens_as_token_ids"], true);

  const Completion c = dialect->parse_response(kVllmChatResponse);
  EXPECT_EQ(c.text, " the cat");
  EXPECT_EQ(c.token_ids, (std::vector<int64_t>{279, 8415}));
  EXPECT_EQ(c.prompt_token_ids, (std::vector<int64_t>{1, 15, 16, 17, 18, 19, 20, 21, 22}));
  EXPECT_EQ(c.new_tokens, 2);
  ASSERT_EQ(c.top_logprobs.size(), 2u);
  EXPECT_EQ(c.top_logprobs[1][0].token_id, 8415) << "the alternatives as listed: the chosen token first";
  EXPECT_DOUBLE_EQ(c.top_logprobs[0][1].logprob, -1.75);
  EXPECT_EQ(c.chosen_logprobs, (std::vector<std::optional<double>>{-0.25, -1.5})) << "content[i].logprob";
  EXPECT_EQ(dialect->alternatives_listing().order, AlternativesListing::Order::kChosenFirst);
  json no_ids = json::parse(kVllmChatResponse);
  no_ids["choices"][0].erase("token_ids");
  EXPECT_EQ(malformed(*dialect, no_ids.dump()), "field 'choices[0].token_ids': missing (the server ignored return_token_ids)");
  json text_tokens = json::parse(kVllmChatResponse);
  text_tokens["choices"][0]["logprobs"]["content"][1]["top_logprobs"][0]["token"] = " cat";
  EXPECT_EQ(malformed(*dialect, text_tokens.dump()),
            "field 'choices[0].logprobs.content[1].top_logprobs[0].token': expected a token token_id:<id> "
            "(return_tokens_as_token_ids), got ' cat'");
  json null_content = json::parse(kVllmChatResponse);
  null_content["choices"][0]["message"]["content"] = nullptr;
  EXPECT_EQ(malformed(*dialect, null_content.dump()), "field 'choices[0].message.content': expected a string, got null");
}

// sgl-project/sglang python/sglang/srt/entrypoints/openai/protocol.py: ChatCompletionResponse{id,
// object, created, model, choices: [ChatCompletionResponseChoice{index, message, logprobs,
// finish_reason, matched_stop, prompt_token_ids, token_ids}], usage}; the ids only when the
// request sets return_prompt_token_ids and return_token_ids.
constexpr const char* kSglangChatResponse = R"({
  "id": "5c1e", "object": "chat.completion", "created": 1732300000, "model": "m",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": " the cat", "reasoning_content": null, "tool_calls": null},
    "logprobs": null, "finish_reason": "length", "matched_stop": null,
    "prompt_token_ids": [1, 15, 16], "token_ids": [279, 8415]}],
  "usage": {"prompt_tokens": 3, "total_tokens": 5, "completion_tokens": 2, "prompt_tokens_details": null, "reasoning_tokens": 0},
  "metadata": {"weight_version": "default"}})";

TEST(SglangChatDialect, AsksForBothIdListsAndReadsThemFromTheChoice) {
  const auto dialect = dialect_from_name("sglang-chat");
  EXPECT_FALSE(dialect->gives_top_logprobs()) << "SGLang's chat logprobs name tokens by text";
  CompletionRequest sampled = conversation();
  sampled.top_k = 20;
  sampled.seed = 7;
  const json request = json::parse(dialect->request_body(sampled));
  EXPECT_EQ(request["return_token_ids"], true);
  EXPECT_EQ(request["return_prompt_token_ids"], true);
  EXPECT_EQ(request["top_k"], 20);
  EXPECT_EQ(request["seed"], 7);
  const Completion c = dialect->parse_response(kSglangChatResponse);
  EXPECT_EQ(c.token_ids, (std::vector<int64_t>{279, 8415}));
  EXPECT_EQ(c.prompt_token_ids, (std::vector<int64_t>{1, 15, 16}));
  EXPECT_EQ(c.new_tokens, 2);
}

// serving_chat.py refuses return_token_ids and return_prompt_token_ids in a stream.
TEST(SglangChatDialect, StreamsWithoutAskingForIds) {
  const auto dialect = dialect_from_name("sglang-chat");
  CompletionRequest request = conversation();
  request.stream = true;
  const json streamed = json::parse(dialect->request_body(request));
  EXPECT_EQ(streamed["stream"], true);
  EXPECT_EQ(streamed["stream_options"]["include_usage"], true);
  EXPECT_FALSE(streamed.contains("return_token_ids"));
  EXPECT_FALSE(streamed.contains("return_prompt_token_ids"));
  EXPECT_TRUE(dialect->gives_token_ids()) << "in a whole answer";
  EXPECT_FALSE(dialect->gives_stream_token_ids());
  EXPECT_TRUE(dialect_from_name("vllm-chat")->gives_stream_token_ids());
}

TEST(OpenaiChatDialect, ReadsTheMessageAndTheUsageCountOnly) {
  const auto dialect = dialect_from_name("openai-chat");
  EXPECT_FALSE(dialect->gives_token_ids());
  const json request = json::parse(dialect->request_body(conversation()));
  EXPECT_FALSE(request.contains("return_token_ids"));
  const Completion c = dialect->parse_response(kVllmChatResponse);
  EXPECT_EQ(c.text, " the cat");
  EXPECT_FALSE(c.token_ids.has_value());
  EXPECT_TRUE(c.prompt_token_ids.empty());
  EXPECT_EQ(c.new_tokens, 2);
  EXPECT_EQ(malformed(*dialect, R"({"choices": [{"text": "x"}]})"), "field 'choices[0].message': missing");
}

// min_p where each server reads it; TGI has none, and collect refuses --min-p for it.
TEST(Dialects, SendMinPWhereTheServerTakesIt) {
  CompletionRequest ids = greedy_ids();
  ids.min_p = 0.05;
  CompletionRequest chat = conversation();
  chat.min_p = 0.05;
  for (const char* name : {"vllm", "openai"}) EXPECT_EQ(json::parse(dialect_from_name(name)->request_body(ids))["min_p"], 0.05) << name;
  for (const char* name : {"vllm-chat", "sglang-chat", "openai-chat"})
    EXPECT_EQ(json::parse(dialect_from_name(name)->request_body(chat))["min_p"], 0.05) << name;
  EXPECT_EQ(json::parse(dialect_from_name("sglang")->request_body(ids))["sampling_params"]["min_p"], 0.05);
  EXPECT_EQ(json::parse(dialect_from_name("llamacpp")->request_body(ids))["min_p"], 0.05);
  EXPECT_FALSE(dialect_from_name("tgi")->takes_min_p());
  EXPECT_FALSE(json::parse(dialect_from_name("vllm")->request_body(greedy_ids())).contains("min_p"));
}

TEST(VllmDialect, AsksForPromptLogprobsAndReadsThemKeyedByTokenId) {
  const std::unique_ptr<Dialect> vllm = dialect_from_name("vllm");
  CompletionRequest request = greedy_ids();
  request.prompt_logprobs = 2;
  EXPECT_EQ(json::parse(vllm->request_body(request))["prompt_logprobs"], 2);
  EXPECT_FALSE(json::parse(vllm->request_body(greedy_ids())).contains("prompt_logprobs"));
  EXPECT_FALSE(dialect_from_name("openai")->gives_prompt_logprobs());
  const json body = json::parse(R"({"choices": [{"index": 0, "text": "a", "token_ids": [1], "prompt_logprobs":
      [null, {"7": {"logprob": -1.5, "rank": 2, "decoded_token": "x"}, "9": {"logprob": -0.5, "rank": 1}}]}]})");
  const Completion completion = vllm->parse_response(body.dump());
  ASSERT_EQ(completion.prompt_logprobs.size(), 1u);
  ASSERT_EQ(completion.prompt_logprobs[0].size(), 2u);
  EXPECT_EQ(completion.prompt_logprobs[0][0].token_id, 7);
  EXPECT_EQ(completion.prompt_logprobs[0][0].logprob, -1.5);
  json bad = body;
  bad["choices"][0]["prompt_logprobs"][1] = {{"x7", {{"logprob", -1.5}}}};
  EXPECT_EQ(malformed(*vllm, bad.dump()), "field 'choices[0].prompt_logprobs[1].x7': expected a token id as the key");
}

// Each server's words for why a generation ended, as its source defines them, in OpenAI's.
TEST(Dialects, ReadTheFinishReasonInOpenAisWords) {
  const auto reason = [](const char* name, const json& body) { return dialect_from_name(name)->parse_response(body.dump()).finish_reason; };
  const json choice = {{"index", 0}, {"text", "a"}, {"token_ids", {1}}, {"finish_reason", "length"}};
  EXPECT_EQ(reason("vllm", {{"choices", {choice}}}), "length");
  EXPECT_EQ(reason("openai", {{"choices", {{{"index", 0}, {"text", "a"}, {"finish_reason", "stop"}}}}}), "stop");
  EXPECT_EQ(reason("openai", {{"choices", {{{"index", 0}, {"text", "a"}, {"finish_reason", nullptr}}}}}), std::nullopt);
  EXPECT_EQ(reason("openai-chat", {{"choices", {{{"index", 0}, {"message", {{"content", "a"}}}, {"finish_reason", "stop"}}}}}), "stop");
  const json sglang = {{"text", "a"}, {"output_ids", {1}}, {"meta_info", {{"finish_reason", {{"type", "length"}, {"length", 1}}}}}};
  EXPECT_EQ(reason("sglang", sglang), "length");
  const json llamacpp = {{"content", "a"}, {"tokens", {1}}, {"stop_type", "eos"}};
  EXPECT_EQ(reason("llamacpp", llamacpp), "stop");
  EXPECT_EQ(reason("llamacpp", {{"content", "a"}, {"tokens", {1}}, {"stop_type", "limit"}}), "length");
  EXPECT_EQ(reason("llamacpp", {{"content", "a"}, {"tokens", {1}}, {"stop_type", "none"}}), "none");
  const json tgi = {{"generated_text", "a"}, {"details", {{"finish_reason", "eos_token"}, {"tokens", {{{"id", 1}, {"text", "a"}, {"logprob", -0.1}}}}}}};
  EXPECT_EQ(reason("tgi", tgi), "stop");
  EXPECT_EQ(malformed(*dialect_from_name("vllm"), json{{"choices", {{{"index", 0}, {"text", "a"}, {"token_ids", {1}}, {"finish_reason", 3}}}}}.dump()),
            "field 'choices[0].finish_reason': expected a string, got number 3");
}

TEST(Dialects, UnknownNamesAndEndpointsAreInputErrors) {
  EXPECT_THROW(dialect_from_name("triton"), InputError);
  const Endpoint e = parse_endpoint("http://127.0.0.1:8000/proxy/");
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 8000);
  EXPECT_EQ(e.prefix, "/proxy");
  EXPECT_EQ(parse_endpoint("http://[::1]:9").host, "::1");
  EXPECT_THROW(parse_endpoint("https://example.com"), InputError);
  EXPECT_THROW(parse_endpoint("http://host:99999"), InputError);
}

// The page vLLM's counters make, rendered by prometheus_client itself
// (fixtures/metrics/vllm_metrics.py): two engines' series, _created gauges beside the _total
// counters, a model name with escaped quotes and braces.
TEST(SpeculationCounters, ReadThePagePrometheusClientRendersForVllmsCounters) {
  std::ifstream file(SPECGATE_VLLM_METRICS);
  const std::string page((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const std::optional<SpeculationCounters> counters = parse_speculation_counters(page);
  ASSERT_TRUE(counters.has_value()) << page.substr(0, 300);
  EXPECT_EQ(counters->drafts, 42);
  EXPECT_EQ(counters->draft_tokens, 168);
  EXPECT_EQ(counters->accepted_tokens, 50);
  EXPECT_FALSE(counters->realignments.has_value());
}

// A page written by hand: counters with and without labels, a timestamp, a CR before a newline,
// serve's own counters; each counter summed over its label sets.
TEST(SpeculationCounters, ReadVllmsAndServesCountersFromThePrometheusPage) {
  const std::string page =
      "# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n"
      "# TYPE vllm:spec_decode_num_drafts_total counter\n"
      "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m{1}\"} 30.0\n"
      "vllm:spec_decode_num_drafts_total{engine=\"1\",model_name=\"m{1}\"} 12.0\n"
      "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m{1}\"} 168.0\r\n"
      "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m{1}\"} 50 1700000000000\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"0\"} 30.0\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"1\",model_name=\"m\",position=\"0\"} 10.0\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"position=\\\"7\\\"\",position=\"1\"} 10.0\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_created{engine=\"0\",model_name=\"m\",position=\"1\"} 1.7e+09\n"
      "vllm:generation_tokens_total 999\n";
  const std::optional<SpeculationCounters> vllm = parse_speculation_counters(page);
  ASSERT_TRUE(vllm.has_value());
  EXPECT_EQ(vllm->drafts, 42);
  EXPECT_EQ(vllm->draft_tokens, 168);
  EXPECT_EQ(vllm->accepted_tokens, 50);
  EXPECT_FALSE(vllm->realignments.has_value()) << "vLLM does not count them";
  EXPECT_EQ(vllm->accepted_per_position, (std::vector<int64_t>{40, 10})) << "summed over engines, by the position label";
  EXPECT_EQ(counters_line(*vllm),
            "server counters (GET /metrics): 42 drafts, 50 of 168 draft tokens accepted (accepted/drafted 29.8%); "
            "accepted at draft positions 1-2: 40, 10 (of 42 drafts: 95.2%, 23.8%)");

  const std::string serve = page + "specgate:ragged_rounds_total{model_name=\"m\"} 7\nspecgate:realignments_total{model_name=\"m\"} 9\n";
  const SpeculationCounters before = *parse_speculation_counters(serve);
  const std::string later = "vllm:spec_decode_num_drafts_total 50\nvllm:spec_decode_num_draft_tokens_total 200\n"
                            "vllm:spec_decode_num_accepted_tokens_total 60\nspecgate:ragged_rounds_total 10\n"
                            "specgate:realignments_total 19\n"
                            "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 47\n"
                            "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"1\"} 13\n";
  const std::optional<SpeculationCounters> run = counted_between(before, *parse_speculation_counters(later));
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->drafts, 8);
  EXPECT_EQ(run->draft_tokens, 32);
  EXPECT_EQ(run->accepted_tokens, 10);
  EXPECT_EQ(run->realignments, 10);
  EXPECT_EQ(run->ragged_rounds, 3);
  EXPECT_EQ(run->accepted_per_position, (std::vector<int64_t>{7, 3}));
  EXPECT_FALSE(counted_between(*parse_speculation_counters(later), before).has_value()) << "a restarted server's counters";
  EXPECT_FALSE(parse_speculation_counters("vllm:generation_tokens_total 3\n").has_value()) << "no speculation counters";
  EXPECT_FALSE(parse_speculation_counters("vllm:spec_decode_num_draft_tokens_total{a=\"}\n").has_value())
      << "a line cut inside its labels is skipped";
}

}  // namespace
}  // namespace specgate::cli
