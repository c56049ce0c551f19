#pragma once

#include <optional>
#include <string>

#include "impl/sampling/sampling.h"
#include "impl/scoring/answer_reader.h"

namespace specgate {

// The warpers answers were sampled with: the flags' when given, else each answer's
// run.sampling, which every answer must share.
class AnswerWarpers {
 public:
  // `greedy_refusal` ends the InputError for greedy answers or flags; empty: greedy is allowed.
  AnswerWarpers(std::optional<SamplingParams> flags, std::string greedy_refusal);

  // The warpers of `record`; `at` ("file:line") starts the InputError for answers that record
  // none, record greedy decoding where it is refused, or disagree with the answers before.
  SamplingParams of(const AnswerRecord& record, const std::string& at);

  // Those of every answer read so far (the flags' if given); nullopt before the first answer.
  const std::optional<SamplingParams>& settled() const { return settled_; }
  // "flags" or "answers".
  const char* source() const { return from_flags_ ? "flags" : "answers"; }

 private:
  std::optional<SamplingParams> settled_;
  bool from_flags_;
  std::string greedy_refusal_;
};

}  // namespace specgate
