#pragma once

#include "conformance/serve/completion_request.h"
#include "conformance/serve/response_faults.h"
#include "impl/common/sequence_result.h"
#include "impl/model/transformer.h"

namespace specgate::cli {

// What serve reports of a decoded sequence besides its tokens: log-probabilities, when the
// request asks, from one pass of the target over prompt and tokens, as the oracle records them,
// under the seeded faults of those reports.
class ServeReporter {
 public:
  ServeReporter(const Transformer& target, ResponseFaults faults) : target_(target), faults_(faults) {}

  // Whether reporting `request` takes a pass of the target: it asks for log-probabilities.
  static bool needs_pass(const ServeRequest& request) { return request.top_logprobs > 0 || request.prompt_logprobs > 0; }

  Generated report(const ServeRequest& request, SequenceResult sequence) const;
  const ResponseFaults& faults() const { return faults_; }

 private:
  const Transformer& target_;
  const ResponseFaults faults_;
};

}  // namespace specgate::cli
