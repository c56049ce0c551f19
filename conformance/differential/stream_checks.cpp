#include "conformance/differential/stream_checks.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "impl/common/utf8.h"

namespace specgate::cli {
namespace {

// The first place where `a` and `b` differ (the shorter one's length when it begins the other);
// nullopt when they are equal.
template <typename Sequence>
std::optional<size_t> first_difference(const Sequence& a, const Sequence& b) {
  const auto [in_a, in_b] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  if (in_a == a.end() && in_b == b.end()) return std::nullopt;
  return static_cast<size_t>(in_a - a.begin());
}

// The chunk, from 1, that holds element `at` of the chunks' parts put together, `part` giving
// each chunk's; one past the last when the chunks end before it.
template <typename Part>
int64_t chunk_holding(const std::vector<StreamChunk>& chunks, size_t at, Part part) {
  size_t end = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    end += part(chunks[c]).size();
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

std::string id_at(const std::vector<int64_t>& ids, size_t at) { return at < ids.size() ? std::to_string(ids[at]) : "nothing more"; }

const std::string& text_of(const StreamChunk& chunk) { return chunk.text; }
const std::vector<int64_t>& ids_of(const StreamChunk& chunk) {
  static const std::vector<int64_t> none;
  return chunk.token_ids ? *chunk.token_ids : none;
}

// Where the text `streamed` put together first differs from `expected`, named by chunk and byte.
std::optional<std::string> text_difference(const Completion& streamed, const std::string& expected, const char* expected_as) {
  const std::optional<size_t> at = first_difference(streamed.text, expected);
  if (!at) return std::nullopt;
  return chunk_name(chunk_holding(streamed.chunks, *at, text_of), streamed.chunks) + ", byte " + std::to_string(*at) +
         ": the stream has " + excerpt(streamed.text, *at) + ", " + expected_as + " " + excerpt(expected, *at);
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
    if (stream.token_ids && answer.token_ids) {
      if (const std::optional<size_t> at = first_difference(*stream.token_ids, *answer.token_ids))
        find("stream_ids",
             chunk_name(chunk_holding(stream.chunks, *at, ids_of), stream.chunks) + ", token " + std::to_string(*at) +
                 ": the stream gives " + id_at(*stream.token_ids, *at) + ", the whole answer " + id_at(*answer.token_ids, *at) +
                 " (" + std::to_string(stream.token_ids->size()) + " ids streamed, " + std::to_string(answer.token_ids->size()) + " whole)",
             static_cast<int64_t>(*at));
    }
    if (const std::optional<std::string> difference = text_difference(stream, answer.text, "the whole answer"))
      find("stream_text", *difference);
    if (tokenizer != nullptr && stream.token_ids) {
      if (const std::optional<std::string> difference =
              text_difference(stream, utf8_lossy(tokenizer->decode(*stream.token_ids)), "its ids decode to"))
        find("stream_detokenized", *difference);
    }
    const std::string last = chunk_name(static_cast<int64_t>(stream.chunks.size()), stream.chunks);
    if (stream.finish_reason && answer.finish_reason && *stream.finish_reason != *answer.finish_reason)
      find("stream_finish_reason", last + ": the stream finishes with " + *stream.finish_reason + ", the whole answer with " +
                                       *answer.finish_reason);
    if (stream.new_tokens && answer.new_tokens && *stream.new_tokens != *answer.new_tokens) {
      find("stream_usage", "the stream's usage counts " + std::to_string(*stream.new_tokens) + " tokens, the whole answer's " +
                               std::to_string(*answer.new_tokens));
    } else if (stream.new_tokens && stream.token_ids && *stream.new_tokens != static_cast<int64_t>(stream.token_ids->size())) {
      find("stream_usage", "the stream's usage counts " + std::to_string(*stream.new_tokens) + " tokens, its chunks give " +
                               std::to_string(stream.token_ids->size()) + " ids");
    }
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
