#include "impl/scoring/answer_warpers.h"


#include "impl/common/error.h"

namespace specgate {
namespace {

bool same_warpers(const SamplingParams& a, const SamplingParams& b) {
  return a.temperature == b.temperature && a.top_k == b.top_k && a.top_p == b.top_p && a.min_p == b.min_p;
}

}  // namespace

AnswerWarpers::AnswerWarpers(std::optional<SamplingParams> flags, std::string greedy_refusal)
    : settled_(flags), from_flags_(flags.has_value()), greedy_refusal_(std::move(greedy_refusal)) {
  if (!flags) return;
  validate(*flags);
  if (flags->greedy() && !greedy_refusal_.empty())
    throw InputError("--temperature: 0 is greedy decoding; " + greedy_refusal_);
}

SamplingParams AnswerWarpers::of(const AnswerRecord& record, const std::string& at) {
  if (from_flags_) return *settled_;
  if (!record.speed.run)
    throw InputError(at + ": field 'run.sampling': missing; give the engine's --temperature, --top-k, --top-p and --min-p");
  const SamplingSettings& s = record.speed.run->sampling;
  const SamplingParams recorded{.temperature = s.temperature, .top_k = s.top_k.value_or(0), .top_p = s.top_p.value_or(1.0),
                                .min_p = s.min_p.value_or(0.0)};
  if (recorded.greedy() && !greedy_refusal_.empty())
    throw InputError(at + ": field 'run.sampling.temperature': 0, greedy decoding; " + greedy_refusal_);
  if (const std::optional<SamplingProblem> wrong = sampling_problem(recorded))
    throw InputError(at + ": field 'run.sampling." + wrong->field + "': " + wrong->problem);
  if (!settled_) settled_ = recorded;
  if (!same_warpers(*settled_, recorded))
    throw InputError(at + ": field 'run.sampling': " + describe(recorded) + ", where earlier answers have " + describe(*settled_));
  return recorded;
}

}  // namespace specgate
