// Text Generation Inference's POST /generate, and /generate_stream for the same request streamed.
// Fields as huggingface/text-generation-inference defines them in router/src/lib.rs:
// GenerateRequest{inputs (text only), parameters{do_sample, temperature (> 0 only), top_k, top_p,
// seed, max_new_tokens, details, decoder_input_details, top_n_tokens}}, GenerateResponse{
// generated_text, details{finish_reason (length, eos_token or stop_sequence), generated_tokens,
// prefill: [{id, text, logprob}], tokens: [{id, text, logprob, special}], top_tokens: one list
// per token}} and StreamResponse{index, token{id, text, logprob, special}, generated_text,
// details{finish_reason, generated_tokens, seed, input_length}}.
#include "conformance/collect/dialect.h"
#include "conformance/collect/response_fields.h"

namespace specgate::cli {
namespace {

using namespace response;

std::vector<int64_t> ids_of(const json& tokens, const std::string& path) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < list(tokens, path).size(); ++i) ids.push_back(count(member(tokens[i], "id", at(path, i)), at(path, i) + ".id"));
  return ids;
}

std::optional<std::string> finish_reason_of(const json& details) {
  return finish_reason(optional_member(details, "finish_reason"), "details.finish_reason", {"eos_token", "stop_sequence"}, {"length"});
}

class TgiDialect : public Dialect {
 public:
  std::string_view name() const override { return "tgi"; }
  std::string path() const override { return "/generate"; }
  std::string stream_path() const override { return "/generate_stream"; }
  bool takes_token_ids() const override { return false; }
  bool gives_token_ids() const override { return true; }
  bool gives_top_logprobs() const override { return true; }
  bool takes_min_p() const override { return false; }
  // batch_top_tokens: torch.topk, sorted, and every token tied with the last one kept.
  AlternativesListing alternatives_listing() const override { return {.ties_extend = true}; }

  // server.rs's generate_stream refuses decoder_input_details (PrefillDetailsStream).
  std::string request_body(const CompletionRequest& r) const override {
    json parameters = {{"max_new_tokens", r.max_new_tokens}, {"do_sample", r.temperature > 0.0}, {"details", true},
                       {"decoder_input_details", !r.stream}};
    if (r.temperature > 0.0) parameters["temperature"] = r.temperature;
    if (r.top_k) parameters["top_k"] = *r.top_k;
    if (r.top_p) parameters["top_p"] = *r.top_p;
    if (r.seed) parameters["seed"] = *r.seed;
    if (r.top_logprobs > 0) parameters["top_n_tokens"] = r.top_logprobs;
    return json{{"inputs", r.prompt_text}, {"parameters", parameters}}.dump();
  }

  Completion parse_response(std::string_view text_body) const override {
    const json body = parse_body(text_body);
    Completion completion;
    completion.text = text(member(body, "generated_text", ""), "generated_text");
    const json& details = member(body, "details", "");
    const json& tokens = member(details, "tokens", "details");
    completion.token_ids = ids_of(tokens, "details.tokens");
    for (size_t i = 0; i < tokens.size(); ++i)
      completion.chosen_logprobs.push_back(number_or_null(member(tokens[i], "logprob", at("details.tokens", i)), at("details.tokens", i) + ".logprob"));
    completion.finish_reason = finish_reason_of(details);
    if (const json* prefill = optional_member(details, "prefill")) completion.prompt_token_ids = ids_of(*prefill, "details.prefill");
    if (const json* top = optional_member(details, "top_tokens")) {
      const std::string path = "details.top_tokens";
      for (size_t i = 0; i < per_token(*top, completion.token_ids->size(), path).size(); ++i) {
        completion.top_logprobs.emplace_back();
        for (size_t k = 0; k < list((*top)[i], at(path, i)).size(); ++k)
          completion.top_logprobs.back().push_back(id_and_logprob((*top)[i][k], at(at(path, i), k)));
      }
    }
    return completion;
  }

  bool ends_streams_with_done() const override { return false; }

  // server.rs's generate_stream_internal: a StreamResponse per token, each token of a speculative
  // step its own (backends/v3/src/backend.rs's send_responses); the last adds generated_text and
  // details. No data: [DONE]. A token that ends inside a UTF-8 character has text "", its bytes
  // coming with the next (models/model.py's decode_token); a special token's text is left out,
  // as generated_text leaves it (skip_special_tokens).
  StreamChunk parse_stream_chunk(std::string_view data) const override {
    const json body = parse_body(data);
    const json& token = member(body, "token", "");
    StreamChunk chunk{.has_choice = true};
    chunk.token_ids = std::vector<int64_t>{count(member(token, "id", "token"), "token.id")};
    const json& special = member(token, "special", "token");
    if (!special.is_boolean()) throw MalformedResponse("token.special", "expected true or false");
    if (!special.get<bool>()) chunk.text = text(member(token, "text", "token"), "token.text");
    if (optional_member(body, "generated_text") == nullptr) return chunk;
    const json* details = optional_member(body, "details");
    if (details == nullptr) throw MalformedResponse("details", "null in the last chunk (the server ignored parameters.details)");
    chunk.finish_reason = finish_reason_of(*details);
    if (!chunk.finish_reason) throw MalformedResponse("details.finish_reason", "missing in the last chunk");
    chunk.completion_tokens = count(member(*details, "generated_tokens", "details"), "details.generated_tokens");
    return chunk;
  }
};

}  // namespace

std::unique_ptr<Dialect> make_tgi_dialect() { return std::make_unique<TgiDialect>(); }

}  // namespace specgate::cli
