#include "conformance/serve/completion_request.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "impl/common/json_line_context.h"
#include "impl/common/json_value.h"

namespace specgate::cli {
namespace {

using nlohmann::json;

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

std::vector<int64_t> prompt_of(const json& body, const Tokenizer& tokenizer, const ServeLimits& limits) {
  const json* prompt = present(body, "prompt");
  if (prompt == nullptr) refuse("prompt", "missing");
  if (prompt->is_string()) {
    std::vector<int64_t> ids = tokenizer.encode_prompt(prompt->get<std::string>());
    for (const int64_t id : ids) {
      if (id >= limits.vocab_size)
        refuse("prompt", "the tokenizer encodes it with token " + std::to_string(id) + ", outside the model's vocabulary (" +
                             std::to_string(limits.vocab_size) + " tokens)");
    }
    return ids;
  }
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

// The fields a request may carry: those the server reads, and OpenAI's others when they hold the
// value that changes nothing. Anything else is refused rather than silently ignored.
void refuse_unsupported_fields(const json& body) {
  static const std::set<std::string> kRead = {"model", "prompt", "max_tokens", "temperature", "top_k", "top_p", "seed",
                                              "logprobs", "n", "stream", "return_token_ids", "return_tokens_as_token_ids"};
  const auto is = [](const json& value, const json& neutral) { return value == neutral; };
  for (const auto& [field, value] : body.items()) {
    if (kRead.contains(field) || value.is_null()) continue;
    const bool neutral = (field == "stop" && value.is_array() && value.empty()) || (field == "echo" && is(value, false)) ||
                         (field == "best_of" && is(value, 1)) || (field == "presence_penalty" && is(value, 0)) ||
                         (field == "frequency_penalty" && is(value, 0)) || (field == "repetition_penalty" && is(value, 1)) ||
                         (field == "user" && value.is_string());
    if (!neutral) refuse(field, "not supported by this server (" + value.dump(-1, ' ', false, json::error_handler_t::replace) + ")");
  }
}

}  // namespace

ServeRequest parse_completion_request(std::string_view text, const Tokenizer& tokenizer, const ServeLimits& limits) {
  const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) throw RequestRefused(400, "the body is not valid JSON");
  if (!body.is_object()) throw RequestRefused(400, "the body is a JSON " + describe_json(body) + ", not an object");
  if (const json* model = present(body, "model")) {
    if (!model->is_string()) wrong_type("model", "a string", *model);
    if (model->get<std::string>() != limits.model)
      throw RequestRefused(404, "The model `" + model->get<std::string>() + "` does not exist (this server serves `" +
                                    limits.model + "`)");
  }
  refuse_unsupported_fields(body);
  if (flag(body, "stream")) refuse("stream", "streaming is not supported");
  if (const json* n = present(body, "n"); n != nullptr && integer(*n, "n", 1, 1) != 1) refuse("n", "only 1 is supported");

  ServeRequest request;
  request.prompt = prompt_of(body, tokenizer, limits);
  if (const json* max_tokens = present(body, "max_tokens")) request.max_new_tokens = integer(*max_tokens, "max_tokens", 1, limits.context);
  const int64_t needed = static_cast<int64_t>(request.prompt.size()) + request.max_new_tokens;
  if (needed > limits.context)
    refuse("prompt", std::to_string(request.prompt.size()) + " prompt tokens and max_tokens " +
                         std::to_string(request.max_new_tokens) + " need " + std::to_string(needed) +
                         " positions, the model has " + std::to_string(limits.context));
  if (const json* temperature = present(body, "temperature")) {
    request.sampling.temperature = real(*temperature, "temperature");
    if (!(request.sampling.temperature >= 0.0 && std::isfinite(request.sampling.temperature)))
      refuse("temperature", "must be a finite number >= 0");
  }
  if (const json* top_k = present(body, "top_k")) {
    const int64_t k = integer(*top_k, "top_k", -1, limits.vocab_size);
    request.sampling.top_k = k < 0 ? 0 : k;  // vLLM's -1 and 0 both mean off
  }
  if (const json* top_p = present(body, "top_p")) {
    request.sampling.top_p = real(*top_p, "top_p");
    if (!(request.sampling.top_p > 0.0 && request.sampling.top_p <= 1.0)) refuse("top_p", "must be in (0, 1]");
  }
  if (const json* seed = present(body, "seed")) request.seed = static_cast<uint64_t>(integer(*seed, "seed", 0, std::numeric_limits<int64_t>::max()));
  if (const json* logprobs = present(body, "logprobs")) {
    request.top_logprobs = integer(*logprobs, "logprobs", 0, 20);
    if (request.top_logprobs > 0 && !limits.records_logprobs)
      refuse("logprobs", "only the oracle engine records log-probabilities");
  }
  request.return_token_ids = flag(body, "return_token_ids");
  request.token_id_keys = flag(body, "return_tokens_as_token_ids");
  return request;
}

std::string completion_response(const ServeRequest& request, const Generated& generated, const Tokenizer& tokenizer,
                                const std::string& model, int64_t id) {
  json logprobs = nullptr;
  if (request.top_logprobs > 0) {
    json tokens = json::array(), token_logprobs = json::array(), top = json::array();
    const auto key = [&](int64_t token) {
      return request.token_id_keys ? "token_id:" + std::to_string(token) : tokenizer.decode(std::vector<int64_t>{token});
    };
    for (size_t i = 0; i < generated.tokens.size(); ++i) {
      tokens.push_back(key(generated.tokens[i]));
      json alternatives = json::object();
      json chosen = nullptr;
      for (const TokenLogprob& a : generated.top_logprobs.at(i)) {
        alternatives[key(a.token_id)] = a.logprob;
        if (a.token_id == generated.tokens[i]) chosen = a.logprob;
      }
      token_logprobs.push_back(chosen);
      top.push_back(std::move(alternatives));
    }
    logprobs = {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}};
  }
  json choice = {{"index", 0},
                 {"text", tokenizer.decode(generated.tokens)},
                 {"logprobs", logprobs},
                 {"finish_reason", generated.finish_reason == FinishReason::kEos ? "stop" : "length"},
                 {"stop_reason", nullptr}};
  if (request.return_token_ids) {
    choice["token_ids"] = generated.tokens;
    choice["prompt_token_ids"] = request.prompt;
  }
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  const int64_t prompt_tokens = static_cast<int64_t>(request.prompt.size());
  const int64_t completion_tokens = static_cast<int64_t>(generated.tokens.size());
  return json{{"id", "cmpl-" + std::to_string(id)},
              {"object", "text_completion"},
              {"created", created.count()},
              {"model", model},
              {"choices", json::array({choice})},
              {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens + completion_tokens},
                         {"completion_tokens", completion_tokens}}}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string error_response(int status, const std::string& message) {
  const char* type = status == 404 ? "NotFoundError" : status == 503 ? "ServiceUnavailableError" : status >= 500 ? "InternalServerError" : "BadRequestError";
  return json{{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", status}}}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace specgate::cli
