#include "impl/bench/conversation.h"

#include <stdexcept>

#include "impl/common/error.h"

namespace specgate {

void check_template_tokens(const PromptFormat& format, std::string_view flag) {
  for (const std::string_view token : template_tokens(format.chat_template)) {
    if (!format.tokenizer->token_id(token))
      throw InputError(std::string(flag) + " " + std::string(chat_template_name(format.chat_template)) +
                       ": the tokenizer has no token '" + std::string(token) +
                       "', so its text would be encoded as plain text (choose the template of the model's family)");
  }
}

std::string turn_prompt_text(const PromptFormat& format, const Question& question, size_t turn,
                             std::span<const std::vector<int64_t>> answers) {
  if (turn >= question.turns.size() || answers.size() < turn)
    throw std::logic_error("turn_prompt_text: turn " + std::to_string(turn) + " needs the answers of the turns before it");
  if (format.tokenizer == nullptr)
    throw InputError("question " + std::to_string(question.question_id) +
                     ": no prompt_token_ids in its bench line and no tokenizer to build its prompt");
  std::vector<std::string> answer_texts;
  for (size_t t = 0; t < turn; ++t) answer_texts.emplace_back(strip_whitespace(format.tokenizer->decode(answers[t])));
  return render_chat(format.chat_template, std::span(question.turns).first(turn + 1), answer_texts);
}

std::vector<int64_t> encode_turn_prompt(const PromptFormat& format, const std::string& text) {
  return renders_bos(format.chat_template) ? format.tokenizer->encode(text) : format.tokenizer->encode_prompt(text);
}

std::vector<int64_t> turn_prompt(const PromptFormat& format, const Question& question, size_t turn,
                                 std::span<const std::vector<int64_t>> answers) {
  if (!question.prompt_token_ids.empty()) return question.prompt_token_ids.at(turn);
  return encode_turn_prompt(format, turn_prompt_text(format, question, turn, answers));
}

}  // namespace specgate
