#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "impl/bench/chat_template.h"
#include "impl/bench/question.h"
#include "impl/tokenizer/tokenizer.h"

namespace specgate {

// How a turn's prompt is built from a question when its bench line has no prompt_token_ids.
struct PromptFormat {
  const Tokenizer* tokenizer = nullptr;
  ChatTemplate chat_template = ChatTemplate::kRaw;
};

// InputError "<flag> <template>: the tokenizer has no token '<|eot_id|>' ..." when the format's
// tokenizer lacks one of its template's special tokens.
void check_template_tokens(const PromptFormat& format, std::string_view flag);

// The text of turn `turn`'s prompt as Spec-Bench builds it: the question's turns up to `turn`
// rendered with the template, each earlier turn's answer (`answers[t]`, generated ids) entering
// the conversation decoded and stripped of surrounding whitespace.
std::string turn_prompt_text(const PromptFormat& format, const Question& question, size_t turn,
                             std::span<const std::vector<int64_t>> answers);

// The ids of a rendered prompt: the tokenizer's BOS first unless the template renders its own.
std::vector<int64_t> encode_turn_prompt(const PromptFormat& format, const std::string& text);

// The ids turn `turn` starts generation from: the question's prompt_token_ids[turn] verbatim
// when its bench line has them, else encode_turn_prompt(turn_prompt_text(...)).
std::vector<int64_t> turn_prompt(const PromptFormat& format, const Question& question, size_t turn,
                                 std::span<const std::vector<int64_t>> answers);

}  // namespace specgate
