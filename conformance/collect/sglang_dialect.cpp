// SGLang's native POST /generate. Fields as sgl-project/sglang defines them:
// python/sglang/srt/managers/io_struct.py (GenerateReqInput: text or input_ids,
// sampling_params{max_new_tokens, temperature, top_p, top_k, sampling_seed}, return_logprob,
// top_logprobs_num, logprob_start_len) and python/sglang/srt/managers/tokenizer_manager.py
// (the response {"text", "output_ids", "meta_info"}; meta_info.output_token_logprobs and
// output_top_logprobs hold (logprob, token_id, token_text) triples, and spec_verify_ct the
// target's verification passes when speculative decoding runs).
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

  std::string request_body(const CompletionRequest& r) const override {
    json sampling = {{"max_new_tokens", r.max_new_tokens}, {"temperature", r.temperature}};
    if (r.top_k) sampling["top_k"] = *r.top_k;
    if (r.top_p) sampling["top_p"] = *r.top_p;
    if (r.seed) sampling["sampling_seed"] = *r.seed;
    json body = {{"sampling_params", sampling}, {"stream", false}};
    if (r.prompt_ids) {
      body["input_ids"] = *r.prompt_ids;
    } else {
      body["text"] = r.prompt_text;
    }
    if (r.top_logprobs > 0) {
      body["return_logprob"] = true;
      body["top_logprobs_num"] = r.top_logprobs;
      body["logprob_start_len"] = -1;
    }
    return body.dump();
  }

  Completion parse_response(std::string_view text_body) const override {
    const json body = parse_body(text_body);
    Completion completion;
    completion.text = text(member(body, "text", ""), "text");
    const json& meta = member(body, "meta_info", "");
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
    if (const json* top = optional_member(meta, "output_top_logprobs")) completion.top_logprobs = top_alternatives(*top, completion.token_ids->size());
    if (const json* passes = optional_member(meta, "spec_verify_ct")) completion.target_passes = count(*passes, "meta_info.spec_verify_ct");
    return completion;
  }

 private:
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
