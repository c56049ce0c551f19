#pragma once

#include <span>
#include <string>
#include <string_view>

namespace specgate {

// How a conversation becomes prompt text. Each template but `raw` renders exactly what its
// checkpoints' own Jinja chat_template renders with add_generation_prompt set:
//   raw     the user turns alone, each later one after the answer before it and a newline;
//   vicuna  Spec-Bench's vicuna_v1.1 (FastChat): system prompt, USER/ASSISTANT roles;
//   chatml  Qwen2/Qwen3 (<|im_start|>role ... <|im_end|>), no system message;
//   smollm2 SmolLM2-Instruct: ChatML after its default system message, answers verbatim;
//   llama3  Llama 3 Instruct (<|begin_of_text|>, header ids, <|eot_id|>);
//   llama2  Llama 2 chat (<s>[INST] ... [/INST] answer </s>).
enum class ChatTemplate { kRaw, kVicuna, kChatml, kSmollm2, kLlama3, kLlama2 };

// Throws InputError naming `flag` for anything but the names above.
ChatTemplate chat_template_from_name(std::string_view name, std::string_view flag);
std::string_view chat_template_name(ChatTemplate chat_template);

// Whether the rendered text starts with the BOS token's text itself (llama2, llama3), so the
// tokenizer must not add another.
bool renders_bos(ChatTemplate chat_template);

// The special tokens the template's text carries, each of which the tokenizer must have as one
// token: a tokenizer without them would encode their text as plain text.
std::span<const std::string_view> template_tokens(ChatTemplate chat_template);

// The prompt text for the last of `user_turns`, after `answers` (one per earlier user turn,
// as the conversation stored them).
std::string render_chat(ChatTemplate chat_template, std::span<const std::string> user_turns,
                        std::span<const std::string> answers);

// `text` without the leading and trailing whitespace Python's str.strip() removes (what
// Jinja's `trim` and Spec-Bench's stored answers use).
std::string_view strip_whitespace(std::string_view text);

}  // namespace specgate
