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
                 {"return_tokens", true},          {"cache_prompt", false},         {"stream", r.stream}};
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
    read_draft_counts(body, completion.drafted_tokens, completion.accepted_drafts);
    count_target_passes(completion);
    return completion;
  }

  bool ends_streams_with_done() const override { return false; }

  // server-context.cpp's send_partial_response, once per token kept, speculative ones included:
  // content and tokens [id], stop false (a token that ends inside a UTF-8 character sends none,
  // its bytes coming with the next); then send_final_response: stop true, content "" and tokens
  // [], stop_type and timings. No data: [DONE].
  StreamChunk parse_stream_chunk(std::string_view data) const override {
    const json body = parse_body(data);
    StreamChunk chunk{.has_choice = true};
    chunk.text = text(member(body, "content", ""), "content");
    chunk.token_ids = token_ids(member(body, "tokens", ""), "tokens");
    const json& stop = member(body, "stop", "");
    if (!stop.is_boolean()) throw MalformedResponse("stop", "expected true or false");
    if (!stop.get<bool>()) return chunk;
    chunk.finish_reason = finish_reason(&member(body, "stop_type", ""), "stop_type", {"eos", "word"}, {"limit"});
    if (!chunk.finish_reason) throw MalformedResponse("stop_type", "null in the chunk that stops");
    read_draft_counts(body, chunk.drafted_tokens, chunk.accepted_drafts);
    return chunk;
  }

  void finish_stream(Completion& completion) const override { count_target_passes(completion); }

 private:
  // timings.draft_n and draft_n_accepted, where both are given.
  static void read_draft_counts(const json& body, std::optional<int64_t>& drafted, std::optional<int64_t>& accepted) {
    const json* timings = optional_member(body, "timings");
    if (timings == nullptr) return;
    const json* drafted_value = optional_member(*timings, "draft_n");
    const json* accepted_value = optional_member(*timings, "draft_n_accepted");
    if (drafted_value == nullptr || accepted_value == nullptr) return;
    drafted = count(*drafted_value, "timings.draft_n");
    accepted = count(*accepted_value, "timings.draft_n_accepted");
    if (*accepted > *drafted) throw MalformedResponse("timings.draft_n_accepted", "more accepted drafts than drafts");
  }

  // Every target pass appends its accepted drafts and one token of its own.
  static void count_target_passes(Completion& completion) {
    if (!completion.accepted_drafts) return;
    const int64_t tokens = static_cast<int64_t>(completion.token_ids->size());
    if (*completion.accepted_drafts > tokens) throw MalformedResponse("timings.draft_n_accepted", "more accepted drafts than tokens");
    completion.target_passes = tokens - *completion.accepted_drafts;
  }

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
