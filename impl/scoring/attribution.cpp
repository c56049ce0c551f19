#include "impl/scoring/attribution.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace specgate {
namespace {

std::optional<double> logprob_of(const std::vector<TokenLogprob>& alternatives, int64_t token) {
  for (const TokenLogprob& alternative : alternatives) {
    if (alternative.token_id == token) return alternative.logprob;
  }
  return std::nullopt;
}

AttributionResult from_logprobs(double reference, double candidate, MarginSource source, double threshold) {
  AttributionResult result;
  result.source = source;
  result.reference_logprob = reference;
  result.candidate_logprob = candidate;
  result.margin = reference - candidate;
  result.kind = classify_margin(*result.margin, threshold);
  return result;
}

std::string nats(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

}  // namespace

std::string_view attribution_name(Attribution attribution) {
  switch (attribution) {
    case Attribution::kHard: return "hard";
    case Attribution::kNearTie: return "near_tie";
    case Attribution::kUnattributed: return "unattributed";
    case Attribution::kLength: return "length";
  }
  return "?";
}

std::string_view margin_source_name(MarginSource source) {
  switch (source) {
    case MarginSource::kTopLogprobs: return "top_logprobs";
    case MarginSource::kTopLogprobsBound: return "top_logprobs_bound";
    case MarginSource::kRescore: return "rescore";
  }
  return "?";
}

Attribution classify_margin(double margin, double threshold) {
  return std::abs(margin) <= threshold ? Attribution::kNearTie : Attribution::kHard;
}

AttributionResult attribute_divergence(int64_t reference_token, int64_t candidate_token,
                                       const std::vector<TokenLogprob>* recorded, const Rescore& rescore,
                                       double threshold) {
  std::optional<double> recorded_reference, recorded_candidate;
  if (recorded != nullptr) {
    recorded_reference = logprob_of(*recorded, reference_token);
    recorded_candidate = logprob_of(*recorded, candidate_token);
    if (recorded_reference && recorded_candidate)
      return from_logprobs(*recorded_reference, *recorded_candidate, MarginSource::kTopLogprobs, threshold);
  }
  std::string why_not_rescored;
  if (rescore) {
    if (const std::optional<RescoredLogprobs> rescored = rescore(why_not_rescored))
      return from_logprobs(rescored->reference, rescored->candidate, MarginSource::kRescore, threshold);
  }

  AttributionResult result;
  std::string note;
  if (recorded == nullptr) {
    note = "the reference answer has no top_logprobs";
  } else if (!recorded_reference) {
    note = "the reference token is not among the " + std::to_string(recorded->size()) + " recorded alternatives";
  } else {
    // Any token left out of a top-k list is at most as likely as the least likely one in it.
    double least = *recorded_reference;
    for (const TokenLogprob& alternative : *recorded) least = std::min(least, alternative.logprob);
    const double bound = *recorded_reference - least;
    if (bound > threshold) {
      result.kind = Attribution::kHard;
      result.source = MarginSource::kTopLogprobsBound;
      result.margin = bound;
      result.margin_is_lower_bound = true;
      result.reference_logprob = recorded_reference;
      return result;
    }
    note = "the candidate token is not among the " + std::to_string(recorded->size()) +
           " recorded alternatives, which bound the margin only to >= " + nats(bound) + " nats";
  }
  note += rescore ? "; re-scoring: " + why_not_rescored : "; no --rescore-with";
  result.note = std::move(note);
  return result;
}

}  // namespace specgate
