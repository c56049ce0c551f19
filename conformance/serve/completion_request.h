#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "impl/bench/chat_template.h"
#include "impl/common/sequence_result.h"
#include "impl/common/token_logprob.h"
#include "impl/sampling/sampling_params.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate::cli {

// The endpoint a request came to.
enum class ServeApi { kCompletions, kChat };

// One POST /v1/completions or /v1/chat/completions request, checked.
struct ServeRequest {
  ServeApi api = ServeApi::kCompletions;
  std::vector<int64_t> prompt;
  int64_t max_new_tokens = 16;
  SamplingParams sampling;  // greedy unless temperature > 0; its seed is the server's, 0
  std::optional<uint64_t> seed;  // names the request's random stream; a fresh one is drawn without
  int64_t top_logprobs = 0;
  int64_t prompt_logprobs = 0;  // vLLM's: alternatives per prompt token, beside the token itself; 0: none
  bool return_token_ids = false;
  bool return_prompt_token_ids = false;  // SGLang's chat field: prompt_token_ids in the choice
  bool token_id_keys = false;  // vLLM's return_tokens_as_token_ids: top_logprobs keyed "token_id:<id>"
  int64_t n = 1;               // independent samples, each a choice of the answer
  bool stream = false;         // answered as server-sent events (CompletionStream)
  bool include_usage = false;  // stream_options.include_usage: a usage chunk ends the stream
};

// The most choices one request may ask (n).
inline constexpr int64_t kMaxChoices = 64;

// The random stream choice `index` of a request samples from, under the request's seed when it
// has one: the seed itself for the first, for each other one drawn from both.
std::optional<uint64_t> choice_seed(const std::optional<uint64_t>& seed, int64_t index);

// What serve answers for a finished sequence: the sequence, its log-probabilities when asked,
// the prompt's when asked, and the count usage reports.
struct Generated {
  SequenceResult sequence;  // its top_logprobs when asked: the oracle's, best first, unless a fault reorders them
  std::vector<double> chosen_logprobs;  // when asked: each token's own log-probability
  // When asked: each prompt token after the first, itself first, then its alternatives.
  std::vector<std::vector<TokenLogprob>> prompt_logprobs;
  int64_t completion_tokens = 0;  // what usage counts: the tokens
};

// A request the server refuses; `status` is its HTTP status, what() one line saying why.
class RequestRefused : public std::runtime_error {
 public:
  RequestRefused(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// What a request may ask of the served model.
struct ServeLimits {
  std::string model;
  int64_t vocab_size = 0;
  int64_t context = 0;       // positions: prompt plus max_tokens
  // Log-probabilities one request may ask reported, each position's own and its alternatives,
  // prompt and completion together: each costs the server time and reply bytes.
  int64_t max_logprob_entries = int64_t{1} << 16;
  ChatTemplate chat_template = ChatTemplate::kRaw;  // renders chat requests' messages
};

// Parses and checks an OpenAI completion request (vLLM's fields included): prompt as text or
// token ids, max_tokens, temperature, top_k, top_p, min_p, seed, logprobs, return_token_ids,
// return_tokens_as_token_ids, n, stream and stream_options.include_usage (a stream reports no
// log-probabilities); OpenAI's stop, echo, best_of, presence_penalty, frequency_penalty,
// repetition_penalty and user only with the value that changes nothing. Throws RequestRefused:
// 400 for any other field, a wrong type or value, a prompt that with max_tokens passes the
// context or ids outside the vocabulary; 404 for another model's name.
ServeRequest parse_completion_request(std::string_view body, const Tokenizer& tokenizer, const ServeLimits& limits);

// Parses and checks an OpenAI chat completion request as parse_completion_request() does, with
// messages instead of prompt (user and assistant turns alternating from the user's, the last the
// user's, content as text), rendered by `limits.chat_template`; max_completion_tokens as
// max_tokens; logprobs as a boolean with top_logprobs; SGLang's return_prompt_token_ids;
// add_generation_prompt only true.
ServeRequest parse_chat_request(std::string_view body, const Tokenizer& tokenizer, const ServeLimits& limits);

// The response to `request` in its endpoint's shape, as vLLM's: a CompletionResponse (token_ids
// and prompt_token_ids in the choice when asked) or a ChatCompletionResponse (token_ids in the
// choice, prompt_token_ids beside the choices), a choice for each of `choices`, usage summed.
std::string response_body(const ServeRequest& request, std::span<const Generated> choices, const Tokenizer& tokenizer,
                          const std::string& model, int64_t id);

// The text of `tokens` as serve answers it, whole or streamed: bytes that are not UTF-8 as U+FFFD.
std::string answer_text(const Tokenizer& tokenizer, std::span<const int64_t> tokens);

// {"error": {"message", "type", "code"}}, as vLLM's ErrorResponse.
std::string error_response(int status, const std::string& message);

}  // namespace specgate::cli
