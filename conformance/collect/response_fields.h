#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "impl/common/token_logprob.h"

// Reading a server's JSON response; every failure is a MalformedResponse naming the field.
namespace specgate::cli::response {

using nlohmann::json;

json parse_body(std::string_view body);
// object[key]; MalformedResponse when `object` is no object or lacks it.
const json& member(const json& object, const char* key, const std::string& path);
// object[key], or nullptr when absent or null.
const json* optional_member(const json& object, const char* key);
const json& element(const json& list, size_t index, const std::string& path);
const json& list(const json& value, const std::string& path);
int64_t count(const json& value, const std::string& path);  // a non-negative integer
double number(const json& value, const std::string& path);
std::optional<double> number_or_null(const json& value, const std::string& path);
std::string text(const json& value, const std::string& path);
std::vector<int64_t> token_ids(const json& value, const std::string& path);
std::string at(const std::string& path, size_t index);  // "path[index]"
// A list with one entry per generated token.
const json& per_token(const json& value, size_t tokens, const std::string& path);
// An {"id", "logprob", ...} object.
TokenLogprob id_and_logprob(const json& entry, const std::string& path);
// A finish reason given as a string, or nullptr when absent or null: "stop" for the words
// `stop_words` lists, "length" for those `length_words` lists, other words as given.
std::optional<std::string> finish_reason(const json* value, const std::string& path,
                                         std::initializer_list<std::string_view> stop_words = {"stop"},
                                         std::initializer_list<std::string_view> length_words = {"length"});

// vLLM's metrics.speculative_decoding of a response or a stream's usage chunk, where present:
// drafted_tokens and accepted_drafts from its num_draft_tokens and num_accepted_draft_tokens,
// steps from per_step_drafted and per_step_accepted (--per-request-spec-decode-metrics detailed).
void read_vllm_speculation(const json& body, std::optional<int64_t>& drafted_tokens, std::optional<int64_t>& accepted_drafts,
                           std::optional<SpeculationSteps>& steps);

// The id in a vLLM "token_id:<id>" token (return_tokens_as_token_ids).
int64_t token_id_key(const std::string& key, const std::string& path);

// An OpenAI stream chunk's usage.completion_tokens, its one choice's index and finish_reason
// put into `chunk`; the choice itself for the dialect to read the rest of, or nullptr for a
// chunk of usage alone.
const json* stream_choice(const json& body, StreamChunk& chunk);

}  // namespace specgate::cli::response
