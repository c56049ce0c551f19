#include "impl/scoring/answer_warpers.h"


#include "impl/common/error.h"
#include "impl/common/short_number.h"

namespace specgate {
namespace {

std::string describe(const SamplingParams& s) {
  return "temperature " + short_number(s.temperature) + ", top_k " + std::to_string(s.top_k) + ", top_p " + short_number(s.top_p);
}

bool same_warpers(const SamplingParams& a, const SamplingParams& b) {
  return a.temperature == b.temperature && a.top_k == b.top_k && a.top_p == b.top_p;
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
    throw InputError(at + ": field 'run.sampling': missing; give the engine's --temperature, --top-k and --top-p");
  const SamplingSettings& s = record.speed.run->sampling;
  const SamplingParams recorded{.temperature = s.temperature, .top_k = s.top_k.value_or(0), .top_p = s.top_p.value_or(1.0)};
  if (recorded.greedy() && !greedy_refusal_.empty())
    throw InputError(at + ": field 'run.sampling.temperature': 0, greedy decoding; " + greedy_refusal_);
  validate(recorded);
  if (!settled_) settled_ = recorded;
  if (!same_warpers(*settled_, recorded))
    throw InputError(at + ": field 'run.sampling': " + describe(recorded) + ", where earlier answers have " + describe(*settled_));
  return recorded;
}

}  // namespace specgate
