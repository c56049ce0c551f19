#include "impl/bench/conversation.h"

#include <c10/util/Exception.h>

namespace specgate {

std::vector<int64_t> turn_prompt(const Tokenizer& tokenizer, const Question& question, size_t turn,
                                 std::span<const std::vector<int64_t>> answers) {
  TORCH_CHECK(turn < question.turns.size() && answers.size() >= turn, "turn_prompt: turn ", turn,
              " needs the answers of the turns before it");
  std::vector<int64_t> prompt = tokenizer.encode_prompt(question.turns.front());
  const std::optional<int64_t> eos = tokenizer.special_tokens().eos;
  for (size_t t = 1; t <= turn; ++t) {
    const std::vector<int64_t>& answer = answers[t - 1];
    const bool ends_with_eos = eos && !answer.empty() && answer.back() == *eos;
    prompt.insert(prompt.end(), answer.begin(), answer.end() - (ends_with_eos ? 1 : 0));
    const std::vector<int64_t> next = tokenizer.encode("\n" + question.turns[t]);
    prompt.insert(prompt.end(), next.begin(), next.end());
  }
  return prompt;
}

}  // namespace specgate
