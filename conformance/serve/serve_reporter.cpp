#include "conformance/serve/serve_reporter.h"

#include "oracle/oracle.h"

namespace specgate::cli {

Generated ServeReporter::report(const ServeRequest& request, SequenceResult sequence) const {
  Generated generated{.sequence = std::move(sequence)};
  SequenceResult& result = generated.sequence;
  generated.completion_tokens = static_cast<int64_t>(result.tokens.size());
  if (request.top_logprobs > 0) {
    GeneratedLogprobs logprobs = oracle_generated_logprobs(target_, request.prompt, result.tokens, request.top_logprobs);
    result.top_logprobs = std::move(logprobs.top);
    generated.chosen_logprobs = std::move(logprobs.chosen);
  }
  if (request.prompt_logprobs > 0)
    generated.prompt_logprobs = oracle_prompt_logprobs(target_, request.prompt, request.prompt_logprobs);
  report_under_faults(faults_, generated);
  return generated;
}

}  // namespace specgate::cli
