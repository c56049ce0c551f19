// SGLang's native POST /generate. Fields as sgl-project/sglang defines them:
// python/sglang/srt/managers/io_struct.py (GenerateReqInput: text or input_ids,
// sampling_params, return_logprob, top_logprobs_num, logprob_start_len);
// python/sglang/srt/sampling/sampling_params.py (max_new_tokens, temperature, top_p, top_k, min_p);
// docs/advanced_features/deterministic_inference.md (sampling_params.sampling_seed, honoured
// with --enable-deterministic-inference); python/sglang/srt/managers/tokenizer_manager.py (the
// response {"text", "output_ids", "meta_info"}: finish_reason {type: stop, length or abort},
// output_token_logprobs and output_top_logprobs, and from logprob_start_len on
// input_token_logprobs and input_top_logprobs (the first prompt token's null),
// hold (logprob, token_id, token_text) triples; under speculative decoding
// _calculate_spec_decoding_metrics adds spec_verify_ct, the target's verification passes, and
// the draft tokens proposed and accepted as spec_draft_token_num and spec_accept_token_num,
// renamed spec_num_proposed_drafts and spec_num_correct_drafts in 2026). The alternatives come
// from layers/logits_processor.py's get_top_logprobs, logprobs.topk(k): k of them, most likely
// first, whichever token was chosen.
#include <algorithm>

#include "conformance/collect/dialect.h"
#include "conformance/collect/response_fields.h"

namespace specgate::cli {
namespace {

using namespace response;

// One (logprob, token_id, text) triple.
TokenLogprob triple(const json& value, const std::string& path) {
  if (list(value, path).size() < 2) throw MalformedResponse(path, "expected [logprob, token_id, text]");
  return {count(value[1], at(path, 1)), number(value[0], at(path, 0))};
}

class SglangDialect : public Dialect {
 public:
  std::string_view name() const override { return "sglang"; }
  std::string path() const override { return "/generate"; }
  bool takes_token_ids() const override { return true; }
  bool gives_token_ids() const override { return true; }
  bool gives_top_logprobs() const override { return true; }
  bool gives_prompt_logprobs() const override { return true; }

  std::string request_body(const CompletionRequest& r) const override {
    json sampling = {{"max_new_tokens", r.max_new_tokens}, {"temperature", r.temperature}};
    if (r.top_k) sampling["top_k"] = *r.top_k;
    if (r.top_p) sampling["top_p"] = *r.top_p;
    if (r.min_p) sampling["min_p"] = *r.min_p;
    if (r.seed) sampling["sampling_seed"] = *r.seed;
    json body = {{"sampling_params", sampling}, {"stream", r.stream}};
    if (r.prompt_ids) {
      body["input_ids"] = *r.prompt_ids;
    } else {
      body["text"] = r.prompt_text;
    }
    if (r.top_logprobs > 0 || r.prompt_logprobs > 0) {
      body["return_logprob"] = true;
      body["top_logprobs_num"] = std::max(r.top_logprobs, r.prompt_logprobs);
      // From the first prompt token where the prompt's are asked; -1: the output's alone.
      body["logprob_start_len"] = r.prompt_logprobs > 0 ? 0 : -1;
    }
    return body.dump();
  }

  Completion parse_response(std::string_view text_body) const override {
    const json body = parse_body(text_body);
    Completion completion;
    completion.text = text(member(body, "text", ""), "text");
    const json& meta = member(body, "meta_info", "");
    completion.finish_reason = finish_reason_of(meta);
    const json* logprobs = optional_member(meta, "output_token_logprobs");
    if (const json* ids = optional_member(body, "output_ids")) {
      completion.token_ids = token_ids(*ids, "output_ids");
    } else if (logprobs != nullptr) {
      std::vector<int64_t> from_logprobs;
      const std::string path = "meta_info.output_token_logprobs";
      for (size_t i = 0; i < list(*logprobs, path).size(); ++i) from_logprobs.push_back(triple((*logprobs)[i], at(path, i)).token_id);
      completion.token_ids = std::move(from_logprobs);
    } else {
      throw MalformedResponse("output_ids", "missing, and no meta_info.output_token_logprobs to take the ids from");
    }
    if (logprobs != nullptr) completion.chosen_logprobs = chosen_logprobs_of(*logprobs, *completion.token_ids);
    if (const json* top = optional_member(meta, "output_top_logprobs")) completion.top_logprobs = top_alternatives(*top, completion.token_ids->size());
    if (const json* input = optional_member(meta, "input_token_logprobs")) read_prompt_logprobs(meta, *input, completion);
    if (const json* passes = optional_member(meta, "spec_verify_ct")) completion.target_passes = count(*passes, "meta_info.spec_verify_ct");
    read_draft_counts(meta, completion.drafted_tokens, completion.accepted_drafts);
    return completion;
  }

  // http_server.py's generate_request: data: {"text", "output_ids", "meta_info"} for each output
  // the scheduler streams (several tokens where a speculative step accepted several), then data:
  // [DONE]. tokenizer_manager.py's _handle_batch_output gives the answer so far in each, or with
  // --incremental-streaming-output the output's own, and meta_info.completion_tokens the count
  // so far; the last adds finish_reason and the speculative counts. The text stops before a
  // character whose bytes have not all come (detokenizer_manager.py), so it can lag the ids.
  StreamChunk parse_stream_chunk(std::string_view data) const override {
    const json body = parse_body(data);
    const json& meta = member(body, "meta_info", "");
    StreamChunk chunk{.has_choice = true};
    chunk.finish_reason = finish_reason_of(meta);
    chunk.completion_tokens = count(member(meta, "completion_tokens", "meta_info"), "meta_info.completion_tokens");
    read_draft_counts(meta, chunk.drafted_tokens, chunk.accepted_drafts);
    chunk.text = text(member(body, "text", ""), "text");
    chunk.token_ids = token_ids(member(body, "output_ids", ""), "output_ids");
    // Ids as many as the count so far are the answer so far; fewer are the output's own.
    chunk.so_far = static_cast<int64_t>(chunk.token_ids->size()) == *chunk.completion_tokens;
    return chunk;
  }

 private:
  // finish_reason's type (stop, length or abort), or finish_reason itself where it is a word.
  static std::optional<std::string> finish_reason_of(const json& meta) {
    const json* reason = optional_member(meta, "finish_reason");
    if (reason == nullptr || !reason->is_object()) return finish_reason(reason, "meta_info.finish_reason");
    return finish_reason(optional_member(*reason, "type"), "meta_info.finish_reason.type");
  }

  static void read_draft_counts(const json& meta, std::optional<int64_t>& drafted, std::optional<int64_t>& accepted) {
    drafted = either_count(meta, "spec_num_proposed_drafts", "spec_draft_token_num");
    accepted = either_count(meta, "spec_num_correct_drafts", "spec_accept_token_num");
    if (drafted && accepted && *accepted > *drafted) throw MalformedResponse("meta_info", "more accepted draft tokens than drafted ones");
  }

  // meta_info's count under its current name, or under the name older releases gave it.
  static std::optional<int64_t> either_count(const json& meta, const char* name, const char* older_name) {
    for (const char* field : {name, older_name}) {
      if (const json* value = optional_member(meta, field)) return count(*value, std::string("meta_info.") + field);
    }
    return std::nullopt;
  }

  // Each token's own triple: its log-probability, where the triple names that token.
  static std::vector<std::optional<double>> chosen_logprobs_of(const json& logprobs, const std::vector<int64_t>& ids) {
    const std::string path = "meta_info.output_token_logprobs";
    std::vector<std::optional<double>> chosen;
    for (size_t i = 0; i < per_token(logprobs, ids.size(), path).size(); ++i) {
      const TokenLogprob own = triple(logprobs[i], at(path, i));
      if (own.token_id != ids[i])
        throw MalformedResponse(at(path, i), "names token " + std::to_string(own.token_id) + ", output_ids token " + std::to_string(ids[i]));
      chosen.push_back(own.logprob);
    }
    return chosen;
  }

  // The prompt's ids from input_token_logprobs, and for each token after the first its
  // input_top_logprobs with the token itself among them.
  static void read_prompt_logprobs(const json& meta, const json& input, Completion& completion) {
    const std::string path = "meta_info.input_token_logprobs", top_path = "meta_info.input_top_logprobs";
    const json* top = optional_member(meta, "input_top_logprobs");
    for (size_t i = 0; i < list(input, path).size(); ++i) {
      const json& own = input[i];
      if (list(own, at(path, i)).size() < 2) throw MalformedResponse(at(path, i), "expected [logprob, token_id, text]");
      completion.prompt_token_ids.push_back(count(own[1], at(at(path, i), 1)));
      if (i == 0) continue;
      std::vector<TokenLogprob>& entry = completion.prompt_logprobs.emplace_back();
      if (top != nullptr && per_token(*top, input.size(), top_path)[i].is_array()) {
        for (size_t k = 0; k < (*top)[i].size(); ++k) entry.push_back(triple((*top)[i][k], at(at(top_path, i), k)));
      }
      const TokenLogprob itself = triple(own, at(path, i));
      if (std::none_of(entry.begin(), entry.end(), [&](const TokenLogprob& a) { return a.token_id == itself.token_id; }))
        entry.push_back(itself);
    }
  }

  static std::vector<std::vector<TokenLogprob>> top_alternatives(const json& top, size_t tokens) {
    const std::string path = "meta_info.output_top_logprobs";
    std::vector<std::vector<TokenLogprob>> alternatives(per_token(top, tokens, path).size());
    for (size_t i = 0; i < top.size(); ++i) {
      if (top[i].is_null()) continue;
      for (size_t k = 0; k < list(top[i], at(path, i)).size(); ++k) alternatives[i].push_back(triple(top[i][k], at(at(path, i), k)));
    }
    return alternatives;
  }
};

}  // namespace

std::unique_ptr<Dialect> make_sglang_dialect() { return std::make_unique<SglangDialect>(); }

}  // namespace specgate::cli
