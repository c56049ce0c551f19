#include "conformance/serve/completion_request.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "impl/bench/conversation.h"
#include "impl/common/json_line_context.h"
#include "impl/common/json_value.h"
#include "impl/common/short_number.h"
#include "impl/common/utf8.h"

namespace specgate::cli {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Deeper than any request of these APIs nests, far shallower than what the recursion of writing
// a value out can take.
constexpr int kMaxNesting = 64;

// A value as an error message quotes it: at most 200 bytes of its JSON.
std::string quoted(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 200) text = text.substr(0, 200) + "... (" + std::to_string(text.size()) + " bytes)";
  return text;
}

[[noreturn]] void refuse(const std::string& field, const std::string& problem) {
  throw RequestRefused(400, "field '" + field + "': " + problem);
}

[[noreturn]] void wrong_type(const std::string& field, const std::string& expected, const json& got) {
  refuse(field, "expected " + expected + ", got " + describe_json(got));
}

const json* present(const json& body, const char* field) {
  const auto it = body.find(field);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

int64_t integer(const json& value, const char* field, int64_t low, int64_t high) {
  if (!value.is_number_integer()) wrong_type(field, "an integer", value);
  const std::optional<int64_t> checked = json_integer(value, low, high);
  if (!checked) refuse(field, value.dump() + " is outside [" + std::to_string(low) + ", " + std::to_string(high) + "]");
  return *checked;
}

double real(const json& value, const char* field) {
  if (!value.is_number()) wrong_type(field, "a number", value);
  return value.get<double>();
}

bool flag(const json& body, const char* field) {
  const json* value = present(body, field);
  if (value == nullptr) return false;
  if (!value->is_boolean()) wrong_type(field, "a boolean", *value);
  return value->get<bool>();
}

// `ids` as the tokenizer encoded `field`, each checked to lie in the model's vocabulary.
std::vector<int64_t> in_vocabulary(std::vector<int64_t> ids, const char* field, const ServeLimits& limits) {
  for (const int64_t id : ids) {
    if (id >= limits.vocab_size)
      refuse(field, "the tokenizer encodes it with token " + std::to_string(id) + ", outside the model's vocabulary (" +
                        std::to_string(limits.vocab_size) + " tokens)");
  }
  return ids;
}

std::vector<int64_t> prompt_of(const json& body, const Tokenizer& tokenizer, const ServeLimits& limits) {
  const json* prompt = present(body, "prompt");
  if (prompt == nullptr) refuse("prompt", "missing");
  if (prompt->is_string()) return in_vocabulary(tokenizer.encode_prompt(prompt->get<std::string>()), "prompt", limits);
  if (!prompt->is_array()) wrong_type("prompt", "a string or a list of token ids", *prompt);
  if (prompt->empty()) refuse("prompt", "expected at least one token id, got an empty list");
  std::vector<int64_t> ids;
  for (size_t i = 0; i < prompt->size(); ++i) {
    const json& id = (*prompt)[i];
    const std::string field = "prompt[" + std::to_string(i) + "]";
    if (!id.is_number_integer()) wrong_type(field, "a token id", id);
    if (id.is_number_unsigned() ? id.get<uint64_t>() >= static_cast<uint64_t>(limits.vocab_size) : id.get<int64_t>() < 0)
      refuse(field, "token " + id.dump() + " is outside the vocabulary (" + std::to_string(limits.vocab_size) + " tokens)");
    ids.push_back(id.get<int64_t>());
  }
  return ids;
}

// The messages rendered with the server's template: user and assistant alternating, the user first and last.
std::vector<int64_t> chat_prompt_of(const json& body, const Tokenizer& tokenizer, const ServeLimits& limits) {
  const json* messages = present(body, "messages");
  if (messages == nullptr) refuse("messages", "missing");
  if (!messages->is_array()) wrong_type("messages", "a list of messages", *messages);
  if (messages->empty()) refuse("messages", "expected at least one message, got an empty list");
  std::vector<std::string> user_turns, answers;
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& message = (*messages)[i];
    const std::string field = "messages[" + std::to_string(i) + "]";
    if (!message.is_object()) wrong_type(field, "an object {role, content}", message);
    for (const auto& [key, value] : message.items()) {
      if (key != "role" && key != "content") refuse(field + "." + key, "not supported by this server");
    }
    const json* role = present(message, "role");
    const json* content = present(message, "content");
    if (role == nullptr || content == nullptr) refuse(field, "expected both role and content");
    if (!role->is_string()) wrong_type(field + ".role", "a string", *role);
    if (!content->is_string()) wrong_type(field + ".content", "text", *content);
    const std::string expected = i % 2 == 0 ? "user" : "assistant";
    if (*role != expected)
      refuse(field + ".role", "expected '" + expected + "' (user and assistant alternate from the user's, template " +
                                  std::string(chat_template_name(limits.chat_template)) + "), got " + quoted(*role));
    (i % 2 == 0 ? user_turns : answers).push_back(content->get<std::string>());
  }
  if (messages->size() % 2 == 0) refuse("messages", "the last message must be the user's");
  const PromptFormat format{&tokenizer, limits.chat_template};
  return in_vocabulary(encode_turn_prompt(format, render_chat(limits.chat_template, user_turns, answers)), "messages", limits);
}

// The fields a request may carry: those the server reads, and OpenAI's others when they hold the
// value that changes nothing. Anything else is refused rather than silently ignored.
void refuse_unsupported_fields(const json& body, ServeApi api) {
  static const std::set<std::string> kCompletion = {"model", "prompt", "max_tokens", "temperature", "top_k", "top_p",
                                                    "min_p", "seed", "logprobs", "prompt_logprobs", "n", "stream",
                                                    "stream_options", "return_token_ids", "return_tokens_as_token_ids"};
  static const std::set<std::string> kChat = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature",
                                              "top_k", "top_p", "min_p", "seed", "logprobs", "top_logprobs", "n", "stream",
                                              "stream_options", "return_token_ids", "return_prompt_token_ids",
                                              "return_tokens_as_token_ids"};
  const auto is = [](const json& value, const json& neutral) { return value == neutral; };
  for (const auto& [field, value] : body.items()) {
    if ((api == ServeApi::kChat ? kChat : kCompletion).contains(field) || value.is_null()) continue;
    const bool neutral = (field == "stop" && value.is_array() && value.empty()) || (field == "presence_penalty" && is(value, 0)) ||
                         (field == "frequency_penalty" && is(value, 0)) || (field == "repetition_penalty" && is(value, 1)) ||
                         (field == "user" && value.is_string()) ||
                         (api == ServeApi::kCompletions && ((field == "echo" && is(value, false)) || (field == "best_of" && is(value, 1)))) ||
                         (api == ServeApi::kChat && field == "add_generation_prompt" && is(value, true));
    if (!neutral) refuse(field, "not supported by this server (" + quoted(value) + ")");
  }
}

// The body as an object for this server's model, its fields all supported.
json request_object(std::string_view text, const ServeLimits& limits, ServeApi api) {
  bool too_deep = false;
  const json::parser_callback_t nesting = [&too_deep](int depth, json::parse_event_t, json&) {
    too_deep = too_deep || depth > kMaxNesting;
    return !too_deep;
  };
  json body = json::parse(text, nesting, /*allow_exceptions=*/false);
  if (too_deep) throw RequestRefused(400, "the body nests deeper than " + std::to_string(kMaxNesting) + " levels");
  if (body.is_discarded()) throw RequestRefused(400, "the body is not valid JSON");
  if (!body.is_object()) throw RequestRefused(400, "the body is a JSON " + describe_json(body) + ", not an object");
  if (const json* model = present(body, "model")) {
    if (!model->is_string()) wrong_type("model", "a string", *model);
    if (model->get<std::string>() != limits.model)
      throw RequestRefused(404, "The model " + quoted(*model) + " does not exist (this server serves `" +
                                    limits.model + "`)");
  }
  refuse_unsupported_fields(body, api);
  return body;
}

// n, stream and stream_options; what a stream does not report is refused.
void read_answer_shape(const json& body, ServeRequest& request) {
  if (const json* n = present(body, "n")) request.n = integer(*n, "n", 1, kMaxChoices);
  request.stream = flag(body, "stream");
  if (const json* options = present(body, "stream_options")) {
    if (!request.stream) refuse("stream_options", "only with stream: true");
    if (!options->is_object()) wrong_type("stream_options", "an object", *options);
    for (const auto& [key, value] : options->items()) {
      if (key != "include_usage" && !(key == "continuous_usage_stats" && value == false))
        refuse("stream_options." + key, "not supported by this server (" + quoted(value) + ")");
    }
    request.include_usage = flag(*options, "include_usage");
  }
  if (!request.stream) return;
  for (const char* field : {"logprobs", "top_logprobs", "prompt_logprobs", "return_prompt_token_ids"}) {
    const json* value = present(body, field);
    if (value != nullptr && *value != false && *value != 0) refuse(field, "not supported with stream: true");
  }
}

// What both endpoints read besides the prompt and the log-probabilities asked.
void read_generation_fields(const json& body, const char* max_tokens_field, const ServeLimits& limits, ServeRequest& request) {
  if (const json* max_tokens = present(body, max_tokens_field))
    request.max_new_tokens = integer(*max_tokens, max_tokens_field, 1, limits.context);
  const int64_t needed = static_cast<int64_t>(request.prompt.size()) + request.max_new_tokens;
  if (needed > limits.context)
    refuse(request.api == ServeApi::kChat ? "messages" : "prompt",
           std::to_string(request.prompt.size()) + " prompt tokens and " + max_tokens_field + " " +
               std::to_string(request.max_new_tokens) + " need " + std::to_string(needed) + " positions, the model has " +
               std::to_string(limits.context));
  if (const json* temperature = present(body, "temperature")) {
    request.sampling.temperature = real(*temperature, "temperature");
    if (!(request.sampling.temperature >= 0.0 && std::isfinite(request.sampling.temperature)))
      refuse("temperature", "must be a finite number >= 0");
    if (request.sampling.temperature > 0.0 && request.sampling.temperature < kMinTemperature)
      refuse("temperature", "below " + short_number(kMinTemperature) + ", where engines decode greedily; give 0 for greedy decoding");
  }
  if (const json* top_k = present(body, "top_k")) {
    const int64_t k = integer(*top_k, "top_k", -1, limits.vocab_size);
    request.sampling.top_k = k < 0 ? 0 : k;  // vLLM's -1 and 0 both mean off
  }
  if (const json* top_p = present(body, "top_p")) {
    request.sampling.top_p = real(*top_p, "top_p");
    if (!(request.sampling.top_p > 0.0 && request.sampling.top_p <= 1.0)) refuse("top_p", "must be in (0, 1]");
  }
  if (const json* min_p = present(body, "min_p")) {
    request.sampling.min_p = real(*min_p, "min_p");
    if (!(request.sampling.min_p >= 0.0 && request.sampling.min_p <= 1.0)) refuse("min_p", "must be in [0, 1]");
  }
  if (const json* seed = present(body, "seed")) request.seed = static_cast<uint64_t>(integer(*seed, "seed", 0, std::numeric_limits<int64_t>::max()));
  request.return_token_ids = flag(body, "return_token_ids");
  request.token_id_keys = flag(body, "return_tokens_as_token_ids");
}

int64_t top_logprobs(const json& value, const char* field) { return integer(value, field, 0, 20); }

// The choice's log-probabilities in each endpoint's shape, tokens named by text or by "token_id:<id>".
// As vLLM's: a position's entries are the chosen token, then the k most likely, the chosen one
// not repeated; completions report them all, a key each, chat the first k.
ordered_json logprobs_of(const ServeRequest& request, const Generated& generated, const Tokenizer& tokenizer) {
  if (request.top_logprobs == 0) return nullptr;
  const auto key = [&](int64_t token) {
    return request.token_id_keys ? "token_id:" + std::to_string(token) : tokenizer.decode(std::vector<int64_t>{token});
  };
  const auto entry = [&](const std::string& token, double logprob) {
    return ordered_json{{"token", token}, {"logprob", logprob}, {"bytes", std::vector<uint8_t>(token.begin(), token.end())}};
  };
  ordered_json tokens = ordered_json::array(), token_logprobs = ordered_json::array(), top = ordered_json::array(),
               content = ordered_json::array();
  for (size_t i = 0; i < generated.sequence.tokens.size(); ++i) {
    const int64_t chosen = generated.sequence.tokens[i];
    const double beside = generated.chosen_logprobs.at(i);
    std::vector<TokenLogprob> entries{{chosen, beside}};
    for (const TokenLogprob& a : generated.sequence.top_logprobs.at(i)) {
      if (a.token_id == chosen) {
        entries.front().logprob = a.logprob;  // the list's own figure, whatever is reported beside it
      } else {
        entries.push_back(a);
      }
    }
    ordered_json alternatives = ordered_json::object(), alternative_list = ordered_json::array();
    for (const TokenLogprob& a : entries) {
      alternatives[key(a.token_id)] = a.logprob;
      if (static_cast<int64_t>(alternative_list.size()) < request.top_logprobs) alternative_list.push_back(entry(key(a.token_id), a.logprob));
    }
    tokens.push_back(key(chosen));
    token_logprobs.push_back(beside);
    top.push_back(std::move(alternatives));
    ordered_json item = entry(key(chosen), beside);
    item["top_logprobs"] = std::move(alternative_list);
    content.push_back(std::move(item));
  }
  if (request.api == ServeApi::kChat) return {{"content", content}};
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}};
}

// vLLM's prompt_logprobs: null for the first prompt token, then {"<id>": {logprob,
// decoded_token}} for each other, the token itself among them.
ordered_json prompt_logprobs_of(const Generated& generated, const Tokenizer& tokenizer) {
  ordered_json out = ordered_json::array({nullptr});
  for (const auto& alternatives : generated.prompt_logprobs) {
    ordered_json entry = ordered_json::object();
    for (const TokenLogprob& a : alternatives)
      entry[std::to_string(a.token_id)] = {{"logprob", a.logprob}, {"decoded_token", tokenizer.decode(std::span(&a.token_id, 1))}};
    out.push_back(std::move(entry));
  }
  return out;
}
// Refuses a request that asks more log-probabilities reported than the server allows.
void check_logprob_entries(const ServeRequest& request, const ServeLimits& limits) {
  const int64_t prompt = request.prompt_logprobs > 0 ? (static_cast<int64_t>(request.prompt.size()) - 1) * (request.prompt_logprobs + 1) : 0;
  const int64_t generated = request.top_logprobs > 0 ? request.n * request.max_new_tokens * (request.top_logprobs + 1) : 0;
  if (prompt + generated <= limits.max_logprob_entries) return;
  const char* field = request.prompt_logprobs > 0 ? "prompt_logprobs"
                      : request.api == ServeApi::kChat ? "top_logprobs" : "logprobs";
  refuse(field, "asks " + std::to_string(prompt + generated) + " log-probabilities reported (each position's own and its " +
                    "alternatives, prompt and completion), more than the " + std::to_string(limits.max_logprob_entries) +
                    " this server reports per request (--max-logprob-entries)");
}

}  // namespace

ServeRequest parse_completion_request(std::string_view text, const Tokenizer& tokenizer, const ServeLimits& limits) {
  const json body = request_object(text, limits, ServeApi::kCompletions);
  ServeRequest request{.api = ServeApi::kCompletions};
  read_answer_shape(body, request);
  request.prompt = prompt_of(body, tokenizer, limits);
  read_generation_fields(body, "max_tokens", limits, request);
  if (const json* logprobs = present(body, "logprobs")) request.top_logprobs = top_logprobs(*logprobs, "logprobs");
  if (const json* logprobs = present(body, "prompt_logprobs")) request.prompt_logprobs = top_logprobs(*logprobs, "prompt_logprobs");
  check_logprob_entries(request, limits);
  return request;
}

ServeRequest parse_chat_request(std::string_view text, const Tokenizer& tokenizer, const ServeLimits& limits) {
  const json body = request_object(text, limits, ServeApi::kChat);
  if (present(body, "max_tokens") != nullptr && present(body, "max_completion_tokens") != nullptr)
    refuse("max_completion_tokens", "give max_tokens or max_completion_tokens, not both");
  ServeRequest request{.api = ServeApi::kChat, .return_prompt_token_ids = flag(body, "return_prompt_token_ids")};
  read_answer_shape(body, request);
  request.prompt = chat_prompt_of(body, tokenizer, limits);
  read_generation_fields(body, present(body, "max_completion_tokens") != nullptr ? "max_completion_tokens" : "max_tokens",
                         limits, request);
  const json* top = present(body, "top_logprobs");
  if (flag(body, "logprobs")) {
    request.top_logprobs = top == nullptr ? 0 : top_logprobs(*top, "top_logprobs");
    if (request.top_logprobs == 0) refuse("top_logprobs", "give how many alternatives per token, 1 to 20");
  } else if (top != nullptr) {
    refuse("top_logprobs", "needs logprobs: true");
  }
  check_logprob_entries(request, limits);
  return request;
}

std::optional<uint64_t> choice_seed(const std::optional<uint64_t>& seed, int64_t index) {
  if (!seed || index == 0) return seed;
  // splitmix64's finalizer over the pair: distinct choices of one seed, and of nearby seeds, draw apart.
  uint64_t z = *seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(index);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::string answer_text(const Tokenizer& tokenizer, std::span<const int64_t> tokens) {
  return utf8_lossy(tokenizer.decode(tokens));
}

std::string response_body(const ServeRequest& request, std::span<const Generated> choices, const Tokenizer& tokenizer,
                          const std::string& model, int64_t id) {
  const bool chat = request.api == ServeApi::kChat;
  ordered_json listed = ordered_json::array();
  int64_t completion_tokens = 0;
  for (size_t index = 0; index < choices.size(); ++index) {
    const Generated& generated = choices[index];
    completion_tokens += generated.completion_tokens;
    const std::string text = answer_text(tokenizer, generated.sequence.tokens);
    // vLLM's keys in vLLM's order, and each position's log-probabilities in its order.
    ordered_json choice = {{"index", index}};
    if (chat) {
      choice["message"] = {{"role", "assistant"}, {"content", text}};
    } else {
      choice["text"] = text;
    }
    choice["logprobs"] = logprobs_of(request, generated, tokenizer);
    if (request.prompt_logprobs > 0) choice["prompt_logprobs"] = prompt_logprobs_of(generated, tokenizer);
    choice["finish_reason"] = generated.sequence.finish_reason == FinishReason::kEos ? "stop" : "length";
    choice["stop_reason"] = nullptr;
    if (request.return_token_ids) {
      choice["token_ids"] = generated.sequence.tokens;
      if (!chat) choice["prompt_token_ids"] = request.prompt;
    }
    if (request.return_prompt_token_ids) choice["prompt_token_ids"] = request.prompt;
    listed.push_back(std::move(choice));
  }
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  const int64_t prompt_tokens = static_cast<int64_t>(request.prompt.size());
  ordered_json response = {{"id", (chat ? "chatcmpl-" : "cmpl-") + std::to_string(id)},
                           {"object", chat ? "chat.completion" : "text_completion"},
                           {"created", created.count()},
                           {"model", model},
                           {"choices", std::move(listed)},
                           {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens + completion_tokens},
                                      {"completion_tokens", completion_tokens}}}};
  if (chat && request.return_token_ids) response["prompt_token_ids"] = request.prompt;
  return response.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string error_response(int status, const std::string& message) {
  const char* type = status == 404 ? "NotFoundError" : status == 503 ? "ServiceUnavailableError" : status >= 500 ? "InternalServerError" : "BadRequestError";
  return json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", status}}}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace specgate::cli
