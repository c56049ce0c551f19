#include "conformance/collect/dialect.h"

#include "impl/common/error.h"
#include "impl/common/logprob_limit.h"

namespace specgate::cli {

StreamChunk Dialect::parse_stream_chunk(std::string_view) const {
  throw std::logic_error("the " + std::string(name()) + " API's streams are not read");
}

void check_completion(const Completion& completion, const CompletionRequest& request, const CompletionChecks& checks) {
  constexpr int64_t kNoVocabularyReaches = int64_t{1} << 31;
  const auto check_id = [&](int64_t id, const std::string& field) {
    if (id >= kNoVocabularyReaches) throw MalformedResponse(field, "token id " + std::to_string(id) + " is beyond any vocabulary");
    if (checks.reports && checks.vocabulary && id >= *checks.vocabulary)
      throw MalformedResponse(field, "token id " + std::to_string(id) + " is beyond the model's vocabulary of " +
                                         std::to_string(*checks.vocabulary));
  };
  const auto check_logprob = [&](double logprob, const std::string& field) {
    if (checks.reports && logprob > kMostLogprobAboveZero)
      throw MalformedResponse(field, "log-probability " + std::to_string(logprob) + " is above 0");
  };
  const bool ran_out = completion.finish_reason == "length";
  if (checks.reports && ran_out && request.max_new_tokens > 0 &&
      ((completion.token_ids && completion.token_ids->empty()) || (!completion.token_ids && completion.new_tokens == 0)))
    throw MalformedResponse("finish_reason", "length, with no tokens though " + std::to_string(request.max_new_tokens) + " were asked");
  if (completion.token_ids) {
    const std::vector<int64_t>& ids = *completion.token_ids;
    for (size_t i = 0; i < ids.size(); ++i) check_id(ids[i], "token_ids[" + std::to_string(i) + "]");
    if (static_cast<int64_t>(ids.size()) > request.max_new_tokens)
      throw MalformedResponse("token_ids", std::to_string(ids.size()) + " tokens, more than the " +
                                               std::to_string(request.max_new_tokens) + " asked");
    if (checks.reports && completion.new_tokens && *completion.new_tokens != static_cast<int64_t>(ids.size()))
      throw MalformedResponse("completion_tokens", "the server counts " + std::to_string(*completion.new_tokens) +
                                                       " tokens, but gave " + std::to_string(ids.size()) + " token ids");
  } else if (completion.new_tokens && *completion.new_tokens > request.max_new_tokens) {
    throw MalformedResponse("completion_tokens", std::to_string(*completion.new_tokens) + " tokens, more than the " +
                                                     std::to_string(request.max_new_tokens) + " asked");
  }
  for (size_t i = 0; i < completion.prompt_token_ids.size(); ++i)
    check_id(completion.prompt_token_ids[i], "prompt_token_ids[" + std::to_string(i) + "]");
  for (size_t i = 0; i < completion.top_logprobs.size(); ++i) {
    for (const TokenLogprob& alternative : completion.top_logprobs[i]) {
      check_id(alternative.token_id, "top_logprobs[" + std::to_string(i) + "]");
      check_logprob(alternative.logprob, "top_logprobs[" + std::to_string(i) + "]");
    }
  }
  for (size_t i = 0; i < completion.chosen_logprobs.size(); ++i) {
    if (completion.chosen_logprobs[i]) check_logprob(*completion.chosen_logprobs[i], "token_logprobs[" + std::to_string(i) + "]");
  }
}

std::unique_ptr<Dialect> dialect_from_name(const std::string& name) {
  if (name == "openai") return make_openai_dialect();
  if (name == "vllm") return make_vllm_dialect();
  if (name == "sglang") return make_sglang_dialect();
  if (name == "llamacpp") return make_llamacpp_dialect();
  if (name == "tgi") return make_tgi_dialect();
  if (name == "openai-chat") return make_openai_chat_dialect();
  if (name == "vllm-chat") return make_vllm_chat_dialect();
  if (name == "sglang-chat") return make_sglang_chat_dialect();
  throw InputError("--api: unknown API '" + name +
                   "' (expected openai, vllm, sglang, llamacpp, tgi, openai-chat, vllm-chat or sglang-chat)");
}

}  // namespace specgate::cli
