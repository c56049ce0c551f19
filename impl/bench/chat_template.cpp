#include "impl/bench/chat_template.h"

#include <array>
#include <stdexcept>
#include <cstdint>
#include <utility>
#include <vector>

#include "impl/common/error.h"
#include "impl/common/utf8.h"

namespace specgate {
namespace {

constexpr std::array<std::pair<std::string_view, ChatTemplate>, 6> kTemplates = {{{"raw", ChatTemplate::kRaw},
                                                                                   {"vicuna", ChatTemplate::kVicuna},
                                                                                   {"chatml", ChatTemplate::kChatml},
                                                                                   {"smollm2", ChatTemplate::kSmollm2},
                                                                                   {"llama3", ChatTemplate::kLlama3},
                                                                                   {"llama2", ChatTemplate::kLlama2}}};

constexpr std::string_view kVicunaSystem =
    "A chat between a curious user and an artificial intelligence assistant. The assistant gives helpful, detailed, "
    "and polite answers to the user's questions.";

constexpr std::string_view kSmollm2System =
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n";

// Python's str.isspace() for one code point.
bool is_python_space(int64_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

// The byte length of the UTF-8 sequence that starts with `lead`.
size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xe0) == 0xc0) return 2;
  if ((lead & 0xf0) == 0xe0) return 3;
  return 4;
}

// The code point of the sequence at text[at, at + length), or -1 when it is not valid UTF-8.
int64_t code_point_at(std::string_view text, size_t at, size_t length) {
  std::vector<int64_t> decoded;
  if (at + length > text.size() || decode_utf8(text.substr(at, length), decoded) || decoded.size() != 1) return -1;
  return decoded.front();
}

// FastChat's SeparatorStyle.ADD_COLON_TWO, as Spec-Bench's vicuna_v1.1 uses it: an empty
// message counts as "not answered yet" there, so it gets no separator.
std::string render_vicuna(std::span<const std::string> user_turns, std::span<const std::string> answers) {
  constexpr std::array<std::string_view, 2> kRoles = {"USER", "ASSISTANT"}, kSeparators = {" ", "</s>"};
  std::string text = std::string(kVicunaSystem) + std::string(kSeparators[0]);
  const auto append = [&](size_t i, std::string_view message) {
    text.append(kRoles[i % 2]).append(":");
    if (!message.empty()) text.append(" ").append(message).append(kSeparators[i % 2]);
  };
  for (size_t turn = 0; turn < user_turns.size(); ++turn) {
    append(0, user_turns[turn]);
    append(1, turn < answers.size() ? std::string_view(answers[turn]) : std::string_view());
  }
  return text;
}

// Qwen3's template drops the reasoning of earlier answers: only what follows the last
// </think>, without its leading newlines, stays.
std::string_view chatml_answer(std::string_view answer) {
  constexpr std::string_view kThinkEnd = "</think>";
  const size_t end = answer.rfind(kThinkEnd);
  if (end == std::string_view::npos) return answer;
  answer.remove_prefix(end + kThinkEnd.size());
  while (!answer.empty() && answer.front() == '\n') answer.remove_prefix(1);
  return answer;
}

// ChatML turns after `text` (a system message, or nothing), each earlier answer as `answer` keeps it.
std::string render_chatml_after(std::string text, std::span<const std::string> user_turns,
                                std::span<const std::string> answers, std::string_view (*answer)(std::string_view)) {
  for (size_t turn = 0; turn < user_turns.size(); ++turn) {
    text.append("<|im_start|>user\n").append(user_turns[turn]).append("<|im_end|>\n");
    if (turn < answers.size()) text.append("<|im_start|>assistant\n").append(answer(answers[turn])).append("<|im_end|>\n");
  }
  return text.append("<|im_start|>assistant\n");
}

std::string_view verbatim(std::string_view answer) { return answer; }

std::string render_llama3(std::span<const std::string> user_turns, std::span<const std::string> answers) {
  std::string text = "<|begin_of_text|>";
  const auto append = [&](std::string_view role, std::string_view content) {
    text.append("<|start_header_id|>").append(role).append("<|end_header_id|>\n\n");
    text.append(strip_whitespace(content)).append("<|eot_id|>");
  };
  for (size_t turn = 0; turn < user_turns.size(); ++turn) {
    append("user", user_turns[turn]);
    if (turn < answers.size()) append("assistant", answers[turn]);
  }
  return text.append("<|start_header_id|>assistant<|end_header_id|>\n\n");
}

std::string render_llama2(std::span<const std::string> user_turns, std::span<const std::string> answers) {
  std::string text;
  for (size_t turn = 0; turn < user_turns.size(); ++turn) {
    text.append("<s>[INST] ").append(strip_whitespace(user_turns[turn])).append(" [/INST]");
    if (turn < answers.size()) text.append(" ").append(strip_whitespace(answers[turn])).append(" </s>");
  }
  return text;
}

std::string render_raw(std::span<const std::string> user_turns, std::span<const std::string> answers) {
  std::string text = user_turns.front();
  for (size_t turn = 1; turn < user_turns.size(); ++turn) text.append(answers[turn - 1]).append("\n").append(user_turns[turn]);
  return text;
}

}  // namespace

ChatTemplate chat_template_from_name(std::string_view name, std::string_view flag) {
  for (const auto& [known, chat_template] : kTemplates) {
    if (name == known) return chat_template;
  }
  throw InputError(std::string(flag) + ": unknown chat template '" + std::string(name) +
                   "' (expected raw, vicuna, chatml, smollm2, llama3 or llama2)");
}

std::string_view chat_template_name(ChatTemplate chat_template) {
  for (const auto& [known, value] : kTemplates) {
    if (value == chat_template) return known;
  }
  return "?";
}

std::span<const std::string_view> template_tokens(ChatTemplate chat_template) {
  static constexpr std::string_view kChatml[] = {"<|im_start|>", "<|im_end|>"};
  static constexpr std::string_view kLlama3[] = {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
  static constexpr std::string_view kLlama2[] = {"<s>", "</s>"};
  switch (chat_template) {
    case ChatTemplate::kChatml:
    case ChatTemplate::kSmollm2:
      return kChatml;
    case ChatTemplate::kLlama3:
      return kLlama3;
    case ChatTemplate::kLlama2:
      return kLlama2;
    case ChatTemplate::kRaw:
    case ChatTemplate::kVicuna:
      break;
  }
  return {};
}

bool renders_bos(ChatTemplate chat_template) {
  return chat_template == ChatTemplate::kLlama3 || chat_template == ChatTemplate::kLlama2;
}

std::string render_chat(ChatTemplate chat_template, std::span<const std::string> user_turns,
                        std::span<const std::string> answers) {
  if (user_turns.empty() || answers.size() + 1 != user_turns.size())
    throw std::logic_error("render_chat: needs one answer before each user turn but the first");
  switch (chat_template) {
    case ChatTemplate::kRaw:
      return render_raw(user_turns, answers);
    case ChatTemplate::kVicuna:
      return render_vicuna(user_turns, answers);
    case ChatTemplate::kChatml:
      return render_chatml_after("", user_turns, answers, chatml_answer);
    case ChatTemplate::kSmollm2:
      return render_chatml_after(std::string(kSmollm2System), user_turns, answers, verbatim);
    case ChatTemplate::kLlama3:
      return render_llama3(user_turns, answers);
    case ChatTemplate::kLlama2:
      return render_llama2(user_turns, answers);
  }
  throw std::logic_error("render_chat: unknown template");
}

std::string_view strip_whitespace(std::string_view text) {
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t length = sequence_length(static_cast<unsigned char>(text[begin]));
    if (!is_python_space(code_point_at(text, begin, length))) break;
    begin += length;
  }
  size_t end = text.size();
  while (end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80) --start;
    if (!is_python_space(code_point_at(text, start, end - start))) break;
    end = start;
  }
  return text.substr(begin, end - begin);
}

}  // namespace specgate
