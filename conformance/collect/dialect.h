#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "impl/bench/answer.h"
#include "impl/common/token_logprob.h"

namespace specgate::cli {

// One message of a conversation sent to a chat endpoint.
struct ChatMessage {
  std::string role;  // user or assistant
  std::string content;
};

// One generation request, whatever the server's dialect.
struct CompletionRequest {
  std::string model;
  std::optional<std::vector<int64_t>> prompt_ids;  // the prompt as token ids where the server takes them
  std::string prompt_text;                         // the prompt otherwise
  std::vector<ChatMessage> messages;               // the conversation, for chat endpoints
  int64_t max_new_tokens = 128;
  double temperature = 0.0;  // 0: greedy
  std::optional<int64_t> top_k;
  std::optional<double> top_p;
  std::optional<double> min_p;
  std::optional<uint64_t> seed;
  int64_t top_logprobs = 0;  // alternatives per generated token; 0: none asked
  int64_t prompt_logprobs = 0;  // alternatives per prompt token, where the API offers them; 0: none asked
  bool stream = false;          // the answer comes as server-sent events, usage in a last chunk
};

// A speculative server's own account of one answer's verify steps, where it gives one (vLLM's
// metrics.speculative_decoding with --per-request-spec-decode-metrics detailed): for each target
// pass that verified drafts, how many were drafted and how many of them accepted. Passes without
// drafts are not listed.
struct SpeculationSteps {
  std::vector<int64_t> drafted, accepted;
};

// One chunk of a streamed answer, its text and token ids its own, not the answer's so far.
struct StreamChunk {
  bool has_choice = false;  // false: a chunk of usage alone (choices: [])
  int64_t index = 0;        // the choice it belongs to
  std::string text;
  std::optional<std::vector<int64_t>> token_ids;  // absent where the server gives none
  std::optional<std::string> finish_reason;       // as Completion's
  std::optional<int64_t> completion_tokens;       // usage
  std::vector<int64_t> prompt_token_ids;          // where the chunk carries them
  std::optional<int64_t> drafted_tokens, accepted_drafts;  // the server's speculation counts, where it gives them
  std::optional<SpeculationSteps> steps;
  bool so_far = false;  // text and token_ids are the answer's so far (SGLang's), not the chunk's own
};

// What a server answered; a figure it does not report is absent.
struct Completion {
  std::string text;
  std::optional<std::vector<int64_t>> token_ids;
  // Per generated token, in the server's order where its API gives a list, most likely first where
  // it gives an object; empty when not given.
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  // Per generated token: the log-probability reported beside the token itself, apart from its
  // alternatives (nullopt where that is null); empty when not given.
  std::vector<std::optional<double>> chosen_logprobs;
  // Per prompt token after the first: its alternatives, the token itself among them when the
  // server is right; empty when not given.
  std::vector<std::vector<TokenLogprob>> prompt_logprobs;
  std::vector<int64_t> prompt_token_ids;                // empty when not given
  std::optional<int64_t> new_tokens;                    // the server's count, where it gives no ids
  std::optional<int64_t> target_passes, drafted_tokens, accepted_drafts;
  std::optional<SpeculationSteps> steps;
  // Why it ended, in OpenAI's words where the server's map onto them: "stop" (an EOS or a stop
  // string) or "length"; another word as given. Absent when not given.
  std::optional<std::string> finish_reason;
  std::optional<StreamRecord> stream;  // a streamed answer's chunks
  std::vector<StreamChunk> chunks;     // a streamed answer's chunks that carried text or tokens, in order
};

// How a server's API lists a token's alternatives when asked for k of them.
struct AlternativesListing {
  enum class Order {
    kNone,              // no promise: a JSON object's keys
    kMostLikelyFirst,   // by log-probability, the most likely first
    kChosenFirst,       // the chosen token first, then the others most likely first (vLLM's chat)
  };
  Order order = Order::kMostLikelyFirst;
  int64_t beyond_asked = 0;  // entries it may add to the k: vLLM's completions add the chosen token
  bool ties_extend = false;  // it adds every token tied with the k-th (TGI)
};

// A response body that lacks what its dialect defines; `field` is its path in the body.
class MalformedResponse : public std::runtime_error {
 public:
  MalformedResponse(const std::string& field, const std::string& problem)
      : std::runtime_error("field '" + field + "': " + problem) {}
  // The same problem, found in a part of the response such as a stream's chunk.
  MalformedResponse(const std::string& where, const MalformedResponse& problem)
      : std::runtime_error(where + ": " + problem.what()) {}
};

// The request and response fields of one server API.
class Dialect {
 public:
  virtual ~Dialect() = default;
  virtual std::string_view name() const = 0;
  virtual std::string path() const = 0;
  // Where it posts a streamed request (TGI's /generate answers whole whatever the request asks).
  virtual std::string stream_path() const { return path(); }
  virtual bool takes_token_ids() const = 0;
  // A chat endpoint: it takes the conversation as messages and renders them with its own template.
  virtual bool takes_messages() const { return false; }
  virtual bool takes_min_p() const { return true; }
  virtual bool gives_token_ids() const = 0;
  // Whether its streamed answers carry token ids (SGLang's chat refuses return_token_ids in a stream).
  virtual bool gives_stream_token_ids() const { return gives_token_ids(); }
  // Whether top_logprobs come back keyed by token id; a dialect that names them by text alone
  // is not asked for them.
  virtual bool gives_top_logprobs() const = 0;
  // What its API promises of each token's alternatives list.
  virtual AlternativesListing alternatives_listing() const { return {}; }
  // Whether its whole answers carry the ids the server fed as the prompt (prompt_token_ids).
  virtual bool gives_prompt_token_ids() const { return false; }
  // Whether it reports the prompt tokens' log-probabilities (vLLM's prompt_logprobs).
  virtual bool gives_prompt_logprobs() const { return false; }
  // Whether its servers refuse a request naming a model they do not serve (vLLM's 404), so
  // that /v1/models must list the model asked for; llama.cpp, TGI and SGLang answer any name.
  virtual bool routes_by_model() const { return false; }
  virtual std::string request_body(const CompletionRequest& request) const = 0;
  // Throws MalformedResponse.
  virtual Completion parse_response(std::string_view body) const = 0;
  // Whether its streams end with data: [DONE] (OpenAI's); otherwise the chunk that gives the
  // finish reason is the last.
  virtual bool ends_streams_with_done() const { return true; }
  // One event's data of a streamed answer other than [DONE]. Throws MalformedResponse.
  virtual StreamChunk parse_stream_chunk(std::string_view data) const;
  // What the dialect derives from a streamed answer put together, as parse_response does from a
  // whole one. Throws MalformedResponse.
  virtual void finish_stream(Completion&) const {}
};

std::unique_ptr<Dialect> make_openai_dialect();
std::unique_ptr<Dialect> make_vllm_dialect();
std::unique_ptr<Dialect> make_sglang_dialect();
std::unique_ptr<Dialect> make_llamacpp_dialect();
std::unique_ptr<Dialect> make_tgi_dialect();
std::unique_ptr<Dialect> make_openai_chat_dialect();
std::unique_ptr<Dialect> make_vllm_chat_dialect();
std::unique_ptr<Dialect> make_sglang_chat_dialect();

// What check_completion holds a completion to.
struct CompletionChecks {
  // The figures besides tokens too: a token count that disagrees with the token ids, a finish
  // reason of length with no tokens, a log-probability above 0, an id past `vocabulary`. false
  // where the caller judges them itself (differential).
  bool reports = true;
  std::optional<int64_t> vocabulary;  // the model's, when known; every id is below 2^31 anyway
};

// MalformedResponse when a completion cannot be the answer to `request`: more tokens than it
// asked, a token or prompt id beyond the vocabulary, and what `checks` asks.
void check_completion(const Completion& completion, const CompletionRequest& request, const CompletionChecks& checks = {});

// openai, vllm, sglang, llamacpp, tgi, openai-chat, vllm-chat or sglang-chat; InputError naming
// --api otherwise.
std::unique_ptr<Dialect> dialect_from_name(const std::string& name);

}  // namespace specgate::cli
