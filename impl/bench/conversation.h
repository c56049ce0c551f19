#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "impl/bench/question.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate {

// The prompt of turn `turn` of a multi-turn question, as Spec-Bench builds it: the first
// turn is encode_prompt(turns[0]); each later turn continues the conversation, the previous
// turn's prompt, then its answer (`answers[t]`, generated ids, any trailing EOS dropped), then
// a newline and the new turn's text.
std::vector<int64_t> turn_prompt(const Tokenizer& tokenizer, const Question& question, size_t turn,
                                 std::span<const std::vector<int64_t>> answers);

}  // namespace specgate
