// llama.cpp's POST /completion. Fields as ggml-org/llama.cpp defines them in
// tools/server/server-task.cpp: the request's prompt (ids or text), n_predict, temperature,
// top_k, top_p, min_p, repeat_penalty, seed, n_probs, return_tokens and cache_prompt; the
// response's content, tokens, stop_type (stop_type_to_str: eos, word, limit or none),
// completion_probabilities (per token {id, token, bytes, logprob, top_logprobs: [{id, token,
// bytes, logprob}]}) and timings, whose draft_n and
// draft_n_accepted count the draft tokens of speculative decoding. server-context.cpp's
// populate_token_probs takes the alternatives from get_token_probabilities, the softmax of the
// target's logits sorted: min(n_vocab, n_probs) of them, most likely first.
#include "conformance/collect/dialect.h"
#include "conformance/collect/response_fields.h"

namespace specgate::cli {
namespace {

using namespace response;

class LlamacppDialect : public Dialect {
 public:
  std::string_view name() const override { return "llamacpp"; }
  std::string path() const override { return "/completion"; }
  bool takes_token_ids() const override { return true; }
  bool gives_token_ids() const override { return true; }
  bool gives_top_logprobs() const override { return true; }

  // llama.cpp's default samplers are not neutral (top_k 40, top_p 0.95, min_p 0.05): what the
  // user did not ask for is switched off.
  std::string request_body(const CompletionRequest& r) const override {
    json body = {{"n_predict", r.max_new_tokens}, {"temperature", r.temperature},   {"top_k", r.top_k.value_or(0)},
                 {"top_p", r.top_p.value_or(1.0)}, {"min_p", r.min_p.value_or(0.0)},{"repeat_penalty", 1.0},
                 {"return_tokens", true},          {"cache_prompt", false},         {"stream", false}};
    if (r.prompt_ids) {
      body["prompt"] = *r.prompt_ids;
    } else {
      body["prompt"] = r.prompt_text;
    }
    if (r.seed) body["seed"] = *r.seed;
    if (r.top_logprobs > 0) body["n_probs"] = r.top_logprobs;
    return body.dump();
  }

  Completion parse_response(std::string_view text_body) const override {
    const json body = parse_body(text_body);
    Completion completion;
    completion.text = text(member(body, "content", ""), "content");
    completion.token_ids = token_ids(member(body, "tokens", ""), "tokens");
    completion.finish_reason = finish_reason(optional_member(body, "stop_type"), "stop_type", {"eos", "word"}, {"limit"});
    if (const json* probabilities = optional_member(body, "completion_probabilities")) {
      completion.top_logprobs = top_alternatives(*probabilities, completion.token_ids->size());
      for (size_t i = 0; i < completion.token_ids->size(); ++i) {
        const TokenLogprob own = id_and_logprob((*probabilities)[i], at("completion_probabilities", i));
        if (own.token_id != (*completion.token_ids)[i])
          throw MalformedResponse(at("completion_probabilities", i) + ".id",
                                  "token " + std::to_string(own.token_id) + ", tokens has " + std::to_string((*completion.token_ids)[i]));
        completion.chosen_logprobs.push_back(own.logprob);
      }
    }
    if (const json* timings = optional_member(body, "timings")) {
      const json* drafted = optional_member(*timings, "draft_n");
      const json* accepted = optional_member(*timings, "draft_n_accepted");
      if (drafted != nullptr && accepted != nullptr) {
        completion.drafted_tokens = count(*drafted, "timings.draft_n");
        completion.accepted_drafts = count(*accepted, "timings.draft_n_accepted");
        if (*completion.accepted_drafts > *completion.drafted_tokens ||
            *completion.accepted_drafts > static_cast<int64_t>(completion.token_ids->size()))
          throw MalformedResponse("timings.draft_n_accepted", "more accepted drafts than drafts or tokens");
        // Every target pass appends its accepted drafts and one token of its own.
        completion.target_passes = static_cast<int64_t>(completion.token_ids->size()) - *completion.accepted_drafts;
      }
    }
    return completion;
  }

 private:
  static std::vector<std::vector<TokenLogprob>> top_alternatives(const json& probabilities, size_t tokens) {
    const std::string path = "completion_probabilities";
    std::vector<std::vector<TokenLogprob>> alternatives(per_token(probabilities, tokens, path).size());
    for (size_t i = 0; i < tokens; ++i) {
      const std::string top_path = at(path, i) + ".top_logprobs";
      const json& top = member(probabilities[i], "top_logprobs", at(path, i));
      for (size_t k = 0; k < list(top, top_path).size(); ++k) alternatives[i].push_back(id_and_logprob(top[k], at(top_path, k)));
    }
    return alternatives;
  }
};

}  // namespace

std::unique_ptr<Dialect> make_llamacpp_dialect() { return std::make_unique<LlamacppDialect>(); }

}  // namespace specgate::cli
