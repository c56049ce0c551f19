#include "conformance/serve/response_faults.h"

namespace specgate::cli {
namespace {

constexpr std::string_view kNames[] = {"zeroed-logprobs", "stale-logprobs", "usage-counts-drafted", "shifted-prompt-logprobs"};
static_assert(std::size(kNames) == static_cast<size_t>(ResponseFault::kCount));

}  // namespace

std::optional<ResponseFault> response_fault_from_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (kNames[i] == name) return static_cast<ResponseFault>(i);
  }
  return std::nullopt;
}

std::vector<std::string> response_fault_names() { return {std::begin(kNames), std::end(kNames)}; }

void report_under_faults(const ResponseFaults& faults, Generated& generated) {
  if (faults.has(ResponseFault::kZeroedLogprobs)) {
    for (auto& alternatives : generated.sequence.top_logprobs) {
      for (TokenLogprob& alternative : alternatives) alternative.logprob = 0.0;
    }
  }
  if (faults.has(ResponseFault::kStaleLogprobs)) {
    for (size_t i = generated.sequence.top_logprobs.size(); i > 1; --i) generated.sequence.top_logprobs[i - 1] = generated.sequence.top_logprobs[i - 2];
  }
  if (faults.has(ResponseFault::kUsageCountsDrafted)) generated.completion_tokens += (generated.sequence.drafted - generated.sequence.accepted);
  if (faults.has(ResponseFault::kShiftedPromptLogprobs)) {
    auto& prompt = generated.prompt_logprobs;
    for (size_t i = 0; i + 1 < prompt.size(); ++i) prompt[i] = prompt[i + 1];
  }
}

}  // namespace specgate::cli
