#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conformance/serve/completion_request.h"
#include "conformance/serve/response_faults.h"

namespace specgate::cli {

// The server-sent events of one streamed request, as vLLM streams its endpoint: for each choice
// a chunk per decoder round that added tokens (the text they complete and, with
// return_token_ids, their ids; chat's first chunk gives the role, and prompt_token_ids beside
// the choices; completions' gives prompt_token_ids in the choice), and a chunk with the finish
// reason; once every choice finished, usage (stream_options.include_usage) and data: [DONE].
// Text that ends inside a character waits for the bytes that complete it. Each call returns
// the events to send, whole ("data: ...\n\n").
class CompletionStream {
 public:
  CompletionStream(const ServeRequest& request, const Tokenizer& tokenizer, std::string model, int64_t id,
                   ResponseFaults faults);

  // After a round that left choice `index` with `generated` tokens; nothing when it added none.
  std::vector<std::string> advance(int64_t index, std::span<const int64_t> generated);
  // Choice `index` finished as `generated` says.
  std::vector<std::string> finish(int64_t index, const Generated& generated);
  // Decoding failed: vLLM's error event, then data: [DONE].
  std::vector<std::string> fail(int status, const std::string& message);

 private:
  struct Choice {
    int64_t sent_tokens = 0;
    size_t sent_bytes = 0;  // of the decoded text
    bool started = false;   // its first chunk is out
    bool finished = false;
    int64_t completion_tokens = 0;
  };

  // The tokens of `generated` after those sent, and the text they complete (all of it once
  // `finished`), as the choice's next chunk, after chat's role chunk when it is the first.
  void send_delta(int64_t index, std::span<const int64_t> generated, const Generated* finished,
                  std::vector<std::string>& events);
  nlohmann::ordered_json head() const;  // id, object, created, model
  std::string content_chunk(int64_t index, std::span<const int64_t> ids, const std::string& text, const Generated* finished,
                            bool first = false) const;
  static std::string event(const std::string& data) { return "data: " + data + "\n\n"; }

  const ServeRequest request_;
  const Tokenizer& tokenizer_;
  const std::string model_;
  const int64_t id_;
  const int64_t created_;
  const ResponseFaults faults_;
  std::vector<Choice> choices_;
};

}  // namespace specgate::cli
