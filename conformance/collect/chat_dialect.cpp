// POST /v1/chat/completions: OpenAI's, vLLM's and SGLang's. The request carries the conversation
// as messages, which the server renders with its own chat template.
// vLLM (vllm/entrypoints/openai/protocol.py): ChatCompletionRequest's return_token_ids and
// return_tokens_as_token_ids; ChatCompletionResponse.prompt_token_ids beside choices, and
// ChatCompletionResponseChoice.token_ids and finish_reason; logprobs.content[i] = {token, logprob, bytes,
// top_logprobs: [{token, logprob, bytes}]}, each token "token_id:<id>" with
// return_tokens_as_token_ids; _get_top_logprobs lists the first k of the position's dict, the
// chosen token first.
// SGLang (python/sglang/srt/entrypoints/openai/protocol.py): ChatCompletionRequest's top_k,
// return_token_ids and return_prompt_token_ids, both refused in a stream (serving_chat.py);
// ChatCompletionResponseChoice.token_ids and prompt_token_ids. Its logprobs name tokens by text
// alone.
#include "conformance/collect/dialect.h"
#include "conformance/collect/response_fields.h"

namespace specgate::cli {
namespace {

using namespace response;

enum class ChatServer { kOpenai, kVllm, kSglang };

class ChatDialect : public Dialect {
 public:
  explicit ChatDialect(ChatServer server) : server_(server) {}

  std::string_view name() const override {
    return server_ == ChatServer::kVllm ? "vllm-chat" : server_ == ChatServer::kSglang ? "sglang-chat" : "openai-chat";
  }
  std::string path() const override { return "/v1/chat/completions"; }
  bool routes_by_model() const override { return server_ != ChatServer::kSglang; }
  bool takes_token_ids() const override { return false; }
  bool takes_messages() const override { return true; }
  bool gives_token_ids() const override { return server_ != ChatServer::kOpenai; }
  bool gives_stream_token_ids() const override { return server_ == ChatServer::kVllm; }
  bool gives_prompt_token_ids() const override { return server_ != ChatServer::kOpenai; }
  bool gives_top_logprobs() const override { return server_ == ChatServer::kVllm; }
  AlternativesListing alternatives_listing() const override { return {.order = AlternativesListing::Order::kChosenFirst}; }

  std::string request_body(const CompletionRequest& r) const override {
    json messages = json::array();
    for (const ChatMessage& message : r.messages) messages.push_back({{"role", message.role}, {"content", message.content}});
    json body = {{"model", r.model}, {"messages", messages}, {"max_tokens", r.max_new_tokens},
                 {"temperature", r.temperature}, {"stream", r.stream}};
    if (r.stream) body["stream_options"] = {{"include_usage", true}};
    if (r.top_k) body["top_k"] = *r.top_k;
    if (r.top_p) body["top_p"] = *r.top_p;
    if (r.min_p) body["min_p"] = *r.min_p;
    if (r.seed) body["seed"] = *r.seed;
    if (r.stream ? gives_stream_token_ids() : gives_token_ids()) body["return_token_ids"] = true;
    if (server_ == ChatServer::kSglang && !r.stream) body["return_prompt_token_ids"] = true;
    if (r.top_logprobs > 0) {
      body["logprobs"] = true;
      body["top_logprobs"] = r.top_logprobs;
      if (server_ == ChatServer::kVllm) body["return_tokens_as_token_ids"] = true;
    }
    return body.dump();
  }

  Completion parse_response(std::string_view text_body) const override {
    const json body = parse_body(text_body);
    const json& choice = element(member(body, "choices", ""), 0, "choices");
    Completion completion;
    completion.text = text(member(member(choice, "message", "choices[0]"), "content", "choices[0].message"),
                           "choices[0].message.content");
    completion.finish_reason = finish_reason(optional_member(choice, "finish_reason"), "choices[0].finish_reason");
    if (const json* usage = optional_member(body, "usage"); usage != nullptr) {
      if (const json* tokens = optional_member(*usage, "completion_tokens"))
        completion.new_tokens = count(*tokens, "usage.completion_tokens");
    }
    if (server_ == ChatServer::kOpenai) return completion;
    if (optional_member(choice, "token_ids") == nullptr)
      throw MalformedResponse("choices[0].token_ids", "missing (the server ignored return_token_ids)");
    completion.token_ids = token_ids(choice["token_ids"], "choices[0].token_ids");
    const json& prompt_holder = server_ == ChatServer::kVllm ? body : choice;
    const std::string prompt_path = server_ == ChatServer::kVllm ? "prompt_token_ids" : "choices[0].prompt_token_ids";
    if (const json* prompt = optional_member(prompt_holder, "prompt_token_ids"))
      completion.prompt_token_ids = token_ids(*prompt, prompt_path);
    if (server_ == ChatServer::kVllm) {
      if (const json* logprobs = optional_member(choice, "logprobs"); logprobs != nullptr) {
        if (const json* content = optional_member(*logprobs, "content")) {
          completion.top_logprobs = top_alternatives(*content, completion.token_ids->size());
          const std::string path = "choices[0].logprobs.content";
          for (size_t i = 0; i < content->size(); ++i)
            completion.chosen_logprobs.push_back(number_or_null(member((*content)[i], "logprob", at(path, i)), at(path, i) + ".logprob"));
        }
      }
      read_vllm_speculation(body, completion.drafted_tokens, completion.accepted_drafts, completion.steps);
    }
    return completion;
  }

  // vLLM's chat_completion/serving.py chat_completion_stream_generator: first a chunk whose delta
  // holds the role (prompt_token_ids beside choices), then one per engine step with delta.content
  // and (return_token_ids) token_ids, the last with finish_reason; then one with choices [] and
  // usage. SGLang's serving_chat.py _generate_chat_stream: the role chunk, one per output with
  // delta.content, finish_reason in a chunk of its own with no content, the usage chunk; no ids.
  StreamChunk parse_stream_chunk(std::string_view data) const override {
    const json body = parse_body(data);
    StreamChunk chunk;
    if (const json* prompt = optional_member(body, "prompt_token_ids"); prompt != nullptr && server_ == ChatServer::kVllm)
      chunk.prompt_token_ids = token_ids(*prompt, "prompt_token_ids");
    const json* choice_of_chunk = stream_choice(body, chunk);
    if (server_ == ChatServer::kVllm) read_vllm_speculation(body, chunk.drafted_tokens, chunk.accepted_drafts, chunk.steps);
    if (choice_of_chunk == nullptr) return chunk;
    const json& choice = *choice_of_chunk;
    if (const json* content = optional_member(member(choice, "delta", "choices[0]"), "content"))
      chunk.text = text(*content, "choices[0].delta.content");
    if (!gives_stream_token_ids()) return chunk;
    // The role chunk carries no token_ids key; a chunk of text or an end does.
    if (const json* ids = optional_member(choice, "token_ids")) {
      chunk.token_ids = token_ids(*ids, "choices[0].token_ids");
    } else if (!chunk.text.empty() || chunk.finish_reason) {
      throw MalformedResponse("choices[0].token_ids", "missing (the server ignored return_token_ids)");
    }
    return chunk;
  }

 private:
  static std::vector<std::vector<TokenLogprob>> top_alternatives(const json& content, size_t tokens) {
    const std::string path = "choices[0].logprobs.content";
    std::vector<std::vector<TokenLogprob>> alternatives(per_token(content, tokens, path).size());
    for (size_t i = 0; i < content.size(); ++i) {
      const std::string top_path = at(path, i) + ".top_logprobs";
      const json& top = list(member(content[i], "top_logprobs", at(path, i)), top_path);
      for (size_t k = 0; k < top.size(); ++k) {
        const std::string field = at(top_path, k);
        alternatives[i].push_back({token_id_key(text(member(top[k], "token", field), field + ".token"), field + ".token"),
                                   number(member(top[k], "logprob", field), field + ".logprob")});
      }
    }
    return alternatives;
  }

  ChatServer server_;
};

}  // namespace

std::unique_ptr<Dialect> make_openai_chat_dialect() { return std::make_unique<ChatDialect>(ChatServer::kOpenai); }
std::unique_ptr<Dialect> make_vllm_chat_dialect() { return std::make_unique<ChatDialect>(ChatServer::kVllm); }
std::unique_ptr<Dialect> make_sglang_chat_dialect() { return std::make_unique<ChatDialect>(ChatServer::kSglang); }

}  // namespace specgate::cli
