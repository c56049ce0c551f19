#include "conformance/serve/response_faults.h"

#include <algorithm>

namespace specgate::cli {
namespace {

constexpr std::string_view kNames[] = {"zeroed-logprobs",         "stale-logprobs",    "usage-counts-drafted",
                                       "shifted-prompt-logprobs", "zeroed-drafted-logprobs", "unsorted-logprobs",
                                       "unnormalized-logprobs",   "stream-last-token-only",  "stream-cut-utf8",
                                       "stream-usage-counts-drafted", "stream-chunk-after-finish"};
static_assert(std::size(kNames) == static_cast<size_t>(ResponseFault::kCount));

// Whether each token was an accepted draft: the prefill's pass gives the tokens before the
// rounds, then every round appends its accepted drafts and a token of the target's own (a round
// cut short by max_tokens or EOS may end on a draft, left unmarked).
std::vector<bool> accepted_drafts(const SequenceResult& sequence) {
  std::vector<bool> drafted(sequence.tokens.size(), false);
  int64_t appended_in_rounds = 0;
  for (const int64_t appended : sequence.accept_lengths) appended_in_rounds += appended;
  size_t next = static_cast<size_t>(std::max<int64_t>(static_cast<int64_t>(drafted.size()) - appended_in_rounds, 0));
  for (const int64_t appended : sequence.accept_lengths) {
    for (int64_t k = 0; k + 1 < appended && next < drafted.size(); ++k) drafted[next++] = true;
    ++next;
  }
  return drafted;
}

}  // namespace

std::optional<ResponseFault> response_fault_from_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (kNames[i] == name) return static_cast<ResponseFault>(i);
  }
  return std::nullopt;
}

std::vector<std::string> response_fault_names() { return {std::begin(kNames), std::end(kNames)}; }

void report_under_faults(const ResponseFaults& faults, Generated& generated) {
  std::vector<std::vector<TokenLogprob>>& top = generated.sequence.top_logprobs;
  if (faults.has(ResponseFault::kZeroedLogprobs)) {
    for (auto& alternatives : top) {
      for (TokenLogprob& alternative : alternatives) alternative.logprob = 0.0;
    }
    for (double& chosen : generated.chosen_logprobs) chosen = 0.0;
  }
  if (faults.has(ResponseFault::kZeroedDraftedLogprobs) && !generated.chosen_logprobs.empty()) {
    const std::vector<bool> drafted = accepted_drafts(generated.sequence);
    for (size_t i = 0; i < drafted.size(); ++i) {
      if (drafted[i]) generated.chosen_logprobs.at(i) = 0.0;
    }
  }
  if (faults.has(ResponseFault::kUnsortedLogprobs)) {
    for (auto& alternatives : top) std::reverse(alternatives.begin(), alternatives.end());
  }
  if (faults.has(ResponseFault::kUnnormalizedLogprobs)) {
    for (size_t i = 0; i < top.size(); ++i) {
      if (top[i].empty()) continue;
      const auto most_likely = std::max_element(top[i].begin(), top[i].end(),
                                                [](const TokenLogprob& a, const TokenLogprob& b) { return a.logprob < b.logprob; });
      const double shift = 1.0 - most_likely->logprob;
      for (TokenLogprob& alternative : top[i]) alternative.logprob += shift;
      generated.chosen_logprobs.at(i) += shift;
    }
  }
  if (faults.has(ResponseFault::kStaleLogprobs)) {
    for (size_t i = top.size(); i > 1; --i) top[i - 1] = top[i - 2];
  }
  if (faults.has(ResponseFault::kUsageCountsDrafted)) generated.completion_tokens += (generated.sequence.drafted - generated.sequence.accepted);
  if (faults.has(ResponseFault::kShiftedPromptLogprobs)) {
    auto& prompt = generated.prompt_logprobs;
    for (size_t i = 0; i + 1 < prompt.size(); ++i) prompt[i] = prompt[i + 1];
  }
}

}  // namespace specgate::cli
