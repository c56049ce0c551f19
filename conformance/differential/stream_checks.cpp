#include "conformance/differential/stream_checks.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "impl/common/utf8.h"

namespace specgate::cli {
namespace {

// The chunk, from 1, whose text holds byte `at` of the chunks' text put together; one past the
// last when their text ends before it.
int64_t chunk_holding(const std::vector<StreamChunk>& chunks, size_t at) {
  size_t end = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    end += chunks[c].text.size();
    if (at < end) return static_cast<int64_t>(c + 1);
  }
  return static_cast<int64_t>(chunks.size() + 1);
}

std::string chunk_name(int64_t chunk, const std::vector<StreamChunk>& chunks) {
  if (chunk > static_cast<int64_t>(chunks.size())) return "after the last chunk (" + std::to_string(chunks.size()) + ")";
  return "chunk " + std::to_string(chunk);
}

// Up to 16 bytes of `text` from `at`, quoted as JSON writes them.
std::string excerpt(std::string_view text, size_t at) {
  if (at >= text.size()) return "nothing more";
  return nlohmann::json(std::string(text.substr(at, 16))).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Where the text `streamed` put together first differs from `expected`, named by chunk and byte.
std::optional<std::string> text_difference(const Completion& streamed, const std::string& expected, const char* expected_as) {
  const std::string& text = streamed.text;
  if (text == expected) return std::nullopt;
  const auto at = static_cast<size_t>(std::mismatch(text.begin(), text.end(), expected.begin(), expected.end()).first - text.begin());
  return chunk_name(chunk_holding(streamed.chunks, at), streamed.chunks) + ", byte " + std::to_string(at) +
         ": the stream has " + excerpt(text, at) + ", " + expected_as + " " + excerpt(expected, at);
}

}  // namespace

std::vector<SideChannelFinding> compare_streams(const ReportedTurns& whole, const ReportedTurns& streamed,
                                                const Tokenizer* tokenizer) {
  std::vector<SideChannelFinding> findings;
  for (const auto& [key, turn] : streamed) {
    const auto reference = whole.find(key);
    if (reference == whole.end() || !turn.completion.stream) continue;
    const Completion& stream = turn.completion;
    const Completion& answer = reference->second.completion;
    const auto find = [&](const char* kind, std::string detail, std::optional<int64_t> index = std::nullopt) {
      findings.push_back({.question_id = key.first, .turn = key.second, .index = index, .kind = kind,
                          .detail = "turn " + std::to_string(key.second) + ", " + std::move(detail)});
    };
    if (tokenizer != nullptr && stream.token_ids) {
      if (const std::optional<std::string> difference =
              text_difference(stream, utf8_lossy(tokenizer->decode(*stream.token_ids)), "its ids decode to"))
        find("stream_detokenized", *difference);
    }
    if (stream.new_tokens && stream.token_ids && *stream.new_tokens != static_cast<int64_t>(stream.token_ids->size()))
      find("stream_usage", "the stream's usage counts " + std::to_string(*stream.new_tokens) + " tokens, its chunks give " +
                               std::to_string(stream.token_ids->size()) + " ids");
    // Other tokens than the whole answer's are a difference like any other in a crowd, which the
    // schedule's comparison attributes (a near-tie passes); the same tokens must come as whole.
    if (stream.token_ids && answer.token_ids && *stream.token_ids != *answer.token_ids) continue;
    if (const std::optional<std::string> difference = text_difference(stream, answer.text, "the whole answer"))
      find("stream_text", *difference);
    if (stream.finish_reason && answer.finish_reason && *stream.finish_reason != *answer.finish_reason)
      find("stream_finish_reason", chunk_name(static_cast<int64_t>(stream.chunks.size()), stream.chunks) +
                                       ": the stream finishes with " + *stream.finish_reason + ", the whole answer with " +
                                       *answer.finish_reason);
    if (stream.new_tokens && answer.new_tokens && *stream.new_tokens != *answer.new_tokens)
      find("stream_usage", "the stream's usage counts " + std::to_string(*stream.new_tokens) + " tokens, the whole answer's " +
                               std::to_string(*answer.new_tokens));
  }
  return findings;
}

std::map<int64_t, int64_t> chunk_sizes(const ReportedTurns& turns) {
  std::map<int64_t, int64_t> sizes;
  for (const auto& [key, turn] : turns) {
    if (!turn.completion.stream) continue;
    for (const int64_t tokens : turn.completion.stream->chunk_tokens) ++sizes[tokens];
  }
  return sizes;
}

}  // namespace specgate::cli
