#include "conformance/collect/response_fields.h"

#include <algorithm>

#include <charconv>
#include <limits>

#include "conformance/collect/dialect.h"
#include "impl/common/json_line_context.h"
#include "impl/common/json_value.h"

namespace specgate::cli::response {
namespace {

[[noreturn]] void wrong_type(const std::string& path, const std::string& expected, const json& got) {
  throw MalformedResponse(path, "expected " + expected + ", got " + describe_json(got));
}

}  // namespace

json parse_body(std::string_view body) {
  JsonError error;
  std::optional<json> parsed = parse_json(body, error);
  if (!parsed) throw MalformedResponse("(body)", "invalid JSON" + error.at());
  return std::move(*parsed);
}

const json& member(const json& object, const char* key, const std::string& path) {
  if (!object.is_object()) wrong_type(path, "an object", object);
  const auto it = object.find(key);
  const std::string field = path.empty() ? key : path + "." + key;
  if (it == object.end()) throw MalformedResponse(field, "missing");
  return *it;
}

const json* optional_member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

const json& list(const json& value, const std::string& path) {
  if (!value.is_array()) wrong_type(path, "a list", value);
  return value;
}

const json& element(const json& value, size_t index, const std::string& path) {
  if (list(value, path).size() <= index) throw MalformedResponse(at(path, index), "missing");
  return value[index];
}

int64_t count(const json& value, const std::string& path) {
  const bool fits = value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
  if (!fits || value.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()})
    wrong_type(path, "a non-negative integer", value);
  return value.get<int64_t>();
}

double number(const json& value, const std::string& path) {
  if (!value.is_number()) wrong_type(path, "a number", value);
  return value.get<double>();
}

std::optional<double> number_or_null(const json& value, const std::string& path) {
  if (value.is_null()) return std::nullopt;
  return number(value, path);
}

std::string text(const json& value, const std::string& path) {
  if (!value.is_string()) wrong_type(path, "a string", value);
  return value.get<std::string>();
}

std::vector<int64_t> token_ids(const json& value, const std::string& path) {
  std::vector<int64_t> ids;
  for (size_t i = 0; i < list(value, path).size(); ++i) ids.push_back(count(value[i], at(path, i)));
  return ids;
}

const json& per_token(const json& value, size_t tokens, const std::string& path) {
  if (list(value, path).size() != tokens)
    throw MalformedResponse(path, "has " + std::to_string(value.size()) + " entries for " + std::to_string(tokens) + " tokens");
  return value;
}

TokenLogprob id_and_logprob(const json& entry, const std::string& path) {
  return {count(member(entry, "id", path), path + ".id"), number(member(entry, "logprob", path), path + ".logprob")};
}

int64_t token_id_key(const std::string& key, const std::string& path) {
  constexpr std::string_view kPrefix = "token_id:";
  int64_t id = -1;
  const char* end = key.data() + key.size();
  const auto [stop, error] = key.starts_with(kPrefix) ? std::from_chars(key.data() + kPrefix.size(), end, id)
                                                      : std::from_chars_result{key.data(), std::errc::invalid_argument};
  if (error != std::errc{} || stop != end || id < 0)
    throw MalformedResponse(path, "expected a token token_id:<id> (return_tokens_as_token_ids), got '" + key + "'");
  return id;
}

std::string at(const std::string& path, size_t index) { return path + "[" + std::to_string(index) + "]"; }

std::optional<std::string> finish_reason(const json* value, const std::string& path,
                                         std::initializer_list<std::string_view> stop_words,
                                         std::initializer_list<std::string_view> length_words) {
  if (value == nullptr) return std::nullopt;
  const std::string word = text(*value, path);
  if (std::find(stop_words.begin(), stop_words.end(), word) != stop_words.end()) return "stop";
  if (std::find(length_words.begin(), length_words.end(), word) != length_words.end()) return "length";
  return word;
}

void read_vllm_speculation(const json& body, std::optional<int64_t>& drafted_tokens, std::optional<int64_t>& accepted_drafts,
                           std::optional<SpeculationSteps>& steps) {
  const json* metrics = optional_member(body, "metrics");
  const json* speculation = metrics == nullptr ? nullptr : optional_member(*metrics, "speculative_decoding");
  if (speculation == nullptr) return;
  const std::string path = "metrics.speculative_decoding";
  drafted_tokens = count(member(*speculation, "num_draft_tokens", path), path + ".num_draft_tokens");
  accepted_drafts = count(member(*speculation, "num_accepted_draft_tokens", path), path + ".num_accepted_draft_tokens");
  if (*accepted_drafts > *drafted_tokens)
    throw MalformedResponse(path + ".num_accepted_draft_tokens", "more than num_draft_tokens");
  const json* drafted = optional_member(*speculation, "per_step_drafted");
  const json* accepted = optional_member(*speculation, "per_step_accepted");
  if (drafted == nullptr && accepted == nullptr) {
    // vLLM leaves the lists out when they are empty: no step verified drafts.
    if (const json* steps_taken = optional_member(*speculation, "num_spec_steps");
        steps_taken != nullptr && count(*steps_taken, path + ".num_spec_steps") == 0)
      steps = SpeculationSteps{};
    return;
  }
  if (drafted == nullptr || accepted == nullptr)
    throw MalformedResponse(path, "per_step_drafted and per_step_accepted come together");
  SpeculationSteps read;
  int64_t drafted_sum = 0, accepted_sum = 0;
  for (size_t i = 0; i < list(*drafted, path + ".per_step_drafted").size(); ++i) {
    read.drafted.push_back(count((*drafted)[i], at(path + ".per_step_drafted", i)));
    drafted_sum += read.drafted.back();
  }
  for (size_t i = 0; i < list(*accepted, path + ".per_step_accepted").size(); ++i) {
    const std::string field = at(path + ".per_step_accepted", i);
    read.accepted.push_back(count((*accepted)[i], field));
    if (i < read.drafted.size() && read.accepted[i] > read.drafted[i])
      throw MalformedResponse(field, std::to_string(read.accepted[i]) + " accepted of " + std::to_string(read.drafted[i]) + " drafted");
    accepted_sum += read.accepted.back();
  }
  if (read.accepted.size() != read.drafted.size())
    throw MalformedResponse(path + ".per_step_accepted", "has " + std::to_string(read.accepted.size()) + " steps, per_step_drafted " +
                                                             std::to_string(read.drafted.size()));
  if (drafted_sum != *drafted_tokens || accepted_sum != *accepted_drafts)
    throw MalformedResponse(path, "the steps add up to " + std::to_string(accepted_sum) + " of " + std::to_string(drafted_sum) +
                                      " drafts accepted, the totals say " + std::to_string(*accepted_drafts) + " of " +
                                      std::to_string(*drafted_tokens));
  steps = std::move(read);
}

const json* stream_choice(const json& body, StreamChunk& chunk) {
  if (const json* usage = optional_member(body, "usage"); usage != nullptr) {
    if (const json* tokens = optional_member(*usage, "completion_tokens"))
      chunk.completion_tokens = count(*tokens, "usage.completion_tokens");
  }
  const json& choices = list(member(body, "choices", ""), "choices");
  if (choices.empty()) return nullptr;
  if (choices.size() > 1) throw MalformedResponse("choices", "a chunk carries one choice, got " + std::to_string(choices.size()));
  const json& choice = choices[0];
  chunk.has_choice = true;
  chunk.index = count(member(choice, "index", "choices[0]"), "choices[0].index");
  chunk.finish_reason = finish_reason(optional_member(choice, "finish_reason"), "choices[0].finish_reason");
  return &choice;
}

}  // namespace specgate::cli::response
