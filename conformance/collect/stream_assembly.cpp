#include "conformance/collect/stream_assembly.h"

#include <algorithm>
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

// `chunk` with its own text and ids where it gives the answer's so far, which must begin with
// what came before.
StreamChunk own_part(StreamChunk chunk, const Completion& before) {
  if (!chunk.so_far) return chunk;
  const size_t ids_before = before.token_ids ? before.token_ids->size() : 0;
  if (ids_before > 0) {
    if (!chunk.token_ids || chunk.token_ids->size() < ids_before ||
        !std::equal(before.token_ids->begin(), before.token_ids->end(), chunk.token_ids->begin()))
      throw MalformedResponse("token_ids", "the answer so far, yet not the ids of the chunks before");
    chunk.token_ids->erase(chunk.token_ids->begin(), chunk.token_ids->begin() + static_cast<std::ptrdiff_t>(ids_before));
  }
  if (!chunk.text.starts_with(before.text)) throw MalformedResponse("text", "the answer so far, yet not the text of the chunks before");
  chunk.text.erase(0, before.text.size());
  chunk.so_far = false;
  return chunk;
}

void StreamAssembly::take(const StreamChunk& given, double seconds) {
  const StreamChunk chunk = own_part(given, completion_);
  if (chunk.completion_tokens) completion_.new_tokens = chunk.completion_tokens;
  if (chunk.drafted_tokens) completion_.drafted_tokens = chunk.drafted_tokens;
  if (chunk.accepted_drafts) completion_.accepted_drafts = chunk.accepted_drafts;
  if (chunk.steps) completion_.steps = chunk.steps;
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
    if (dialect_.gives_stream_token_ids()) record_.chunk_tokens.push_back(tokens);
    completion_.chunks.push_back(chunk);
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
  if (dialect_.gives_stream_token_ids() && !completion_.token_ids) completion_.token_ids.emplace();
  completion_.stream = std::move(record_);
  dialect_.finish_stream(completion_);
  return std::move(completion_);
}

}  // namespace specgate::cli
