#pragma once

#include <bitset>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conformance/serve/completion_request.h"

namespace specgate::cli {

// Seeded faults of what a speculative server reports besides its tokens, which the tokens never
// show: `serve --inject-fault` takes their names beside the decoders' faults.
enum class ResponseFault {
  kZeroedLogprobs,      // every log-probability reported as 0
  kStaleLogprobs,       // each token reports the alternatives of the token before it
  kUsageCountsDrafted,  // usage.completion_tokens counts rejected drafts as well as the tokens
  kShiftedPromptLogprobs,  // each prompt token reports the next one's log-probabilities
  kZeroedDraftedLogprobs,  // an accepted draft token reports log-probability 0 beside it, its alternatives right
  kUnsortedLogprobs,       // each token's alternatives listed least likely first
  kUnnormalizedLogprobs,   // every value shifted so the most likely reads 1, as unnormalized logits would
  // Of streamed answers only, whose whole answers stay right:
  kStreamLastTokenOnly,       // a chunk carries only the last of its round's tokens, in its ids and its text
  kStreamCutUtf8,             // a chunk's text loses the bytes of its last character of more than one byte
  kStreamUsageCountsDrafted,  // the usage chunk counts rejected drafts as well as the tokens
  kStreamChunkAfterFinish,    // the last token comes again in a chunk after the finish reason's
  kCount,
};

class ResponseFaults {
 public:
  void add(ResponseFault fault) { on_.set(static_cast<size_t>(fault)); }
  bool has(ResponseFault fault) const { return on_.test(static_cast<size_t>(fault)); }
  bool empty() const { return on_.none(); }

 private:
  std::bitset<static_cast<size_t>(ResponseFault::kCount)> on_;
};

// zeroed-logprobs, stale-logprobs, usage-counts-drafted, shifted-prompt-logprobs,
// zeroed-drafted-logprobs, unsorted-logprobs, unnormalized-logprobs, stream-last-token-only,
// stream-cut-utf8, stream-usage-counts-drafted, stream-chunk-after-finish; nullopt for any other name.
std::optional<ResponseFault> response_fault_from_name(std::string_view name);
std::vector<std::string> response_fault_names();

// What `generated` reports under `faults`: its log-probabilities, prompt_logprobs and usage count
// (CompletionStream applies the stream faults).
void report_under_faults(const ResponseFaults& faults, Generated& generated);

}  // namespace specgate::cli
