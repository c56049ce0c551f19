// OpenAI-compatible POST /v1/completions, and vLLM's extension of it.
// Fields as vllm-project/vllm defines them in vllm/entrypoints/openai/protocol.py
// (CompletionRequest: prompt as text or ids, max_tokens, temperature, top_p, top_k, min_p, seed,
// logprobs, return_token_ids, return_tokens_as_token_ids; CompletionResponseChoice: text,
// finish_reason, logprobs{tokens, token_logprobs, top_logprobs: one {token: logprob} per
// token}, token_ids,
// prompt_token_ids, prompt_logprobs (vllm/logprobs.py's PromptLogprobs, asked by
// CompletionRequest.prompt_logprobs); usage.completion_tokens; metrics.speculative_decoding,
// entrypoints/generate/base/protocol.py's SpeculativeDecodingMetrics, in the response or the
// stream's usage chunk). With return_tokens_as_token_ids the keys of
// top_logprobs read "token_id:<id>" (vllm/entrypoints/openai/serving_engine.py).
#include <algorithm>
#include <charconv>

#include "conformance/collect/dialect.h"
#include "conformance/collect/response_fields.h"

namespace specgate::cli {
namespace {

using namespace response;

class OpenaiDialect : public Dialect {
 public:
  explicit OpenaiDialect(bool vllm) : vllm_(vllm) {}

  std::string_view name() const override { return vllm_ ? "vllm" : "openai"; }
  bool routes_by_model() const override { return true; }
  std::string path() const override { return "/v1/completions"; }
  bool takes_token_ids() const override { return true; }
  bool gives_token_ids() const override { return vllm_; }
  bool gives_top_logprobs() const override { return vllm_; }
  bool gives_prompt_logprobs() const override { return vllm_; }
  bool gives_prompt_token_ids() const override { return vllm_; }
  // serving.py's _create_completion_logprobs keeps the position's dict whole: the chosen token,
  // then the k most likely, a key each.
  AlternativesListing alternatives_listing() const override {
    return {.order = AlternativesListing::Order::kNone, .beyond_asked = 1};
  }

  std::string request_body(const CompletionRequest& r) const override {
    json body = {{"model", r.model}, {"max_tokens", r.max_new_tokens}, {"temperature", r.temperature}, {"stream", r.stream}};
    if (r.stream) body["stream_options"] = {{"include_usage", true}};
    if (r.prompt_ids) {
      body["prompt"] = *r.prompt_ids;
    } else {
      body["prompt"] = r.prompt_text;
    }
    if (r.top_k) body["top_k"] = *r.top_k;
    if (r.top_p) body["top_p"] = *r.top_p;
    if (r.min_p) body["min_p"] = *r.min_p;
    if (r.seed) body["seed"] = *r.seed;
    if (vllm_) body["return_token_ids"] = true;
    if (vllm_ && r.prompt_logprobs > 0) body["prompt_logprobs"] = r.prompt_logprobs;
    if (r.top_logprobs > 0) {
      body["logprobs"] = r.top_logprobs;
      if (vllm_) body["return_tokens_as_token_ids"] = true;
    }
    return body.dump();
  }

  Completion parse_response(std::string_view text_body) const override {
    const json body = parse_body(text_body);
    const json& choice = element(member(body, "choices", ""), 0, "choices");
    Completion completion;
    completion.text = text(member(choice, "text", "choices[0]"), "choices[0].text");
    completion.finish_reason = finish_reason(optional_member(choice, "finish_reason"), "choices[0].finish_reason");
    if (const json* usage = optional_member(body, "usage"); usage != nullptr) {
      if (const json* tokens = optional_member(*usage, "completion_tokens"))
        completion.new_tokens = count(*tokens, "usage.completion_tokens");
    }
    if (!vllm_) return completion;
    if (optional_member(choice, "token_ids") == nullptr)
      throw MalformedResponse("choices[0].token_ids", "missing (vLLM 0.10.2 and later return it for return_token_ids)");
    completion.token_ids = token_ids(choice["token_ids"], "choices[0].token_ids");
    if (const json* prompt = optional_member(choice, "prompt_token_ids"))
      completion.prompt_token_ids = token_ids(*prompt, "choices[0].prompt_token_ids");
    if (const json* logprobs = optional_member(choice, "logprobs"); logprobs != nullptr) {
      if (const json* top = optional_member(*logprobs, "top_logprobs"))
        completion.top_logprobs = top_alternatives(*top, completion.token_ids->size());
      if (const json* chosen = optional_member(*logprobs, "token_logprobs")) {
        const std::string path = "choices[0].logprobs.token_logprobs";
        for (size_t i = 0; i < per_token(*chosen, completion.token_ids->size(), path).size(); ++i)
          completion.chosen_logprobs.push_back(number_or_null((*chosen)[i], at(path, i)));
      }
    }
    if (const json* prompt = optional_member(choice, "prompt_logprobs")) completion.prompt_logprobs = prompt_alternatives(*prompt);
    read_vllm_speculation(body, completion.drafted_tokens, completion.accepted_drafts, completion.steps);
    return completion;
  }

  // serving_completion.py's completion_stream_generator: a CompletionStreamResponse per engine
  // step, its one choice carrying the step's text and (return_token_ids) token_ids, the first
  // also prompt_token_ids, the last finish_reason; then one with choices [] and usage.
  StreamChunk parse_stream_chunk(std::string_view data) const override {
    const json body = parse_body(data);
    StreamChunk chunk;
    const json* choice_of_chunk = stream_choice(body, chunk);
    if (vllm_) read_vllm_speculation(body, chunk.drafted_tokens, chunk.accepted_drafts, chunk.steps);
    if (choice_of_chunk == nullptr) return chunk;
    const json& choice = *choice_of_chunk;
    chunk.text = text(member(choice, "text", "choices[0]"), "choices[0].text");
    if (!vllm_) return chunk;
    const json* ids = optional_member(choice, "token_ids");
    if (ids == nullptr) throw MalformedResponse("choices[0].token_ids", "missing (the server ignored return_token_ids)");
    chunk.token_ids = token_ids(*ids, "choices[0].token_ids");
    if (const json* prompt = optional_member(choice, "prompt_token_ids"))
      chunk.prompt_token_ids = token_ids(*prompt, "choices[0].prompt_token_ids");
    return chunk;
  }

 private:
  static std::vector<std::vector<TokenLogprob>> top_alternatives(const json& top, size_t tokens) {
    const std::string path = "choices[0].logprobs.top_logprobs";
    std::vector<std::vector<TokenLogprob>> alternatives(per_token(top, tokens, path).size());
    for (size_t i = 0; i < top.size(); ++i) {
      if (top[i].is_null()) continue;
      if (!top[i].is_object()) throw MalformedResponse(at(path, i), "expected an object of {token: logprob}");
      for (const auto& [key, logprob] : top[i].items()) {
        const std::string field = at(path, i) + "." + key;
        alternatives[i].push_back({token_id_key(key, field), number(logprob, field)});
      }
      // An object's keys have no order to keep.
      std::sort(alternatives[i].begin(), alternatives[i].end(),
                [](const TokenLogprob& a, const TokenLogprob& b) { return a.logprob > b.logprob; });
    }
    return alternatives;
  }

  // vLLM's PromptLogprobs: null for the first prompt token, then {"<id>": {logprob, rank,
  // decoded_token}} for each other.
  static std::vector<std::vector<TokenLogprob>> prompt_alternatives(const json& value) {
    const std::string path = "choices[0].prompt_logprobs";
    std::vector<std::vector<TokenLogprob>> alternatives;
    for (size_t i = 1; i < list(value, path).size(); ++i) {
      const std::string entry_path = at(path, i);
      if (!value[i].is_object()) throw MalformedResponse(entry_path, "expected an object of {token id: {logprob}}");
      std::vector<TokenLogprob>& entry = alternatives.emplace_back();
      for (const auto& [key, logprob] : value[i].items()) {
        const std::string field = entry_path + "." + key;
        int64_t id = 0;
        const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), id);
        if (error != std::errc() || end != key.data() + key.size() || id < 0)
          throw MalformedResponse(field, "expected a token id as the key");
        entry.push_back({id, number(member(logprob, "logprob", field), field + ".logprob")});
      }
    }
    return alternatives;
  }

  bool vllm_;
};

}  // namespace

std::unique_ptr<Dialect> make_openai_dialect() { return std::make_unique<OpenaiDialect>(false); }
std::unique_ptr<Dialect> make_vllm_dialect() { return std::make_unique<OpenaiDialect>(true); }

}  // namespace specgate::cli
