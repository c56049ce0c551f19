#include "conformance/collect/stream_assembly.h"

#include <string>

namespace specgate::cli {

void StreamAssembly::add(std::string_view data, double seconds) {
  const std::string where = "chunk " + std::to_string(++chunks_);
  if (done_) {
    const char* last = dialect_.ends_streams_with_done() ? "data: [DONE]" : "the chunk that gave the finish_reason";
    throw MalformedResponse(where, MalformedResponse("(data)", std::string("came after ") + last));
  }
  if (data == "[DONE]" && dialect_.ends_streams_with_done()) {
    done_ = true;
    return;
  }
  try {
    take(dialect_.parse_stream_chunk(data), seconds);
  } catch (const MalformedResponse& problem) {
    throw MalformedResponse(where, problem);
  }
}

void StreamAssembly::take(const StreamChunk& chunk, double seconds) {
  if (chunk.completion_tokens) completion_.new_tokens = chunk.completion_tokens;
  if (chunk.drafted_tokens) completion_.drafted_tokens = chunk.drafted_tokens;
  if (chunk.accepted_drafts) completion_.accepted_drafts = chunk.accepted_drafts;
  if (completion_.prompt_token_ids.empty()) completion_.prompt_token_ids = chunk.prompt_token_ids;
  if (!chunk.has_choice) return;
  if (chunk.index != 0)
    throw MalformedResponse("choices[0].index", "choice " + std::to_string(chunk.index) + " of an answer asked once (n = 1)");
  const int64_t tokens = chunk.token_ids ? static_cast<int64_t>(chunk.token_ids->size()) : 0;
  if (finished_ && (!chunk.text.empty() || tokens > 0))
    throw MalformedResponse("choices[0]", "text or tokens after the chunk that gave the finish_reason");
  if (finished_ && chunk.finish_reason) throw MalformedResponse("choices[0].finish_reason", "a second finish_reason");
  completion_.text += chunk.text;
  if (chunk.token_ids) {
    if (!completion_.token_ids) completion_.token_ids.emplace();
    completion_.token_ids->insert(completion_.token_ids->end(), chunk.token_ids->begin(), chunk.token_ids->end());
  }
  if (!chunk.text.empty() || tokens > 0) {
    record_.chunk_seconds.push_back(seconds);
    if (dialect_.gives_token_ids()) record_.chunk_tokens.push_back(tokens);
  }
  if (chunk.finish_reason) {
    completion_.finish_reason = chunk.finish_reason;
    finished_ = true;
    done_ = !dialect_.ends_streams_with_done();
  }
}

Completion StreamAssembly::finish() {
  if (dialect_.ends_streams_with_done() && !done_)
    throw MalformedResponse("stream", "ended after " + std::to_string(chunks_) + " chunks without data: [DONE]");
  if (!finished_) throw MalformedResponse("stream", "no chunk gave a finish_reason");
  if (dialect_.gives_token_ids() && !completion_.token_ids) completion_.token_ids.emplace();
  completion_.stream = std::move(record_);
  dialect_.finish_stream(completion_);
  return std::move(completion_);
}

}  // namespace specgate::cli
