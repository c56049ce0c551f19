#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "impl/common/token_logprob.h"

namespace specgate {

// Why a question's first divergence happened (DESIGN.md section 4).
enum class Attribution {
  kHard,          // the reference model clearly prefers the reference token: points at a bug
  kNearTie,       // within the threshold: floating-point non-determinism can flip it
  kUnattributed,  // no log-probabilities to decide with
  kLength,        // one side had ended: there is no token to compare on that side
};
std::string_view attribution_name(Attribution attribution);  // hard, near_tie, unattributed, length

// Where the margin came from.
enum class MarginSource {
  kTopLogprobs,       // both tokens among the reference answer's recorded alternatives
  kTopLogprobsBound,  // only the reference token there: the margin is at least ref - (least recorded)
  kRescore,           // a forward pass of --rescore-with over prompt + common prefix
};
std::string_view margin_source_name(MarginSource source);  // top_logprobs, top_logprobs_bound, rescore

struct AttributionResult {
  Attribution kind = Attribution::kUnattributed;
  std::optional<MarginSource> source;
  // logprob(reference token) - logprob(candidate token) in nats, under the reference model.
  std::optional<double> margin;
  bool margin_is_lower_bound = false;
  std::optional<double> reference_logprob;
  std::optional<double> candidate_logprob;  // absent when only a bound is known
  std::string note;                         // why it is unattributed, when it is
};

// near_tie when |margin| <= threshold, hard otherwise.
Attribution classify_margin(double margin, double threshold);

struct RescoredLogprobs {
  double reference = 0.0;
  double candidate = 0.0;
};
// Re-scores the divergence with the reference model; nullopt, with `why_not` set, when it
// cannot (e.g. the prompt and prefix do not fit the model).
using Rescore = std::function<std::optional<RescoredLogprobs>(std::string& why_not)>;

// Attributes a divergence where both sides have a token. Sources, best first: the
// reference's recorded alternatives at the divergence (`recorded`, null when the answer has
// none) when both tokens are among them; re-scoring (`rescore`, empty when not available);
// a bound from the recorded alternatives when only the reference token is among them and the
// bound alone exceeds the threshold. The candidate engine's own log-probabilities are never
// used.
AttributionResult attribute_divergence(int64_t reference_token, int64_t candidate_token,
                                       const std::vector<TokenLogprob>* recorded, const Rescore& rescore,
                                       double threshold);

}  // namespace specgate
