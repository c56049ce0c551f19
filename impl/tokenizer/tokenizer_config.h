#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "impl/common/json_value.h"

namespace specgate {

// What tokenizer_config.json (beside tokenizer.json) says about special tokens and decoding.
struct TokenizerConfig {
  std::optional<std::string> bos_token, eos_token, pad_token;
  // Whether decoded text gets " ." -> "." and the like, as transformers' decode does.
  bool clean_up_tokenization_spaces = false;
};

// Reads `file`; an absent file gives the defaults. Throws InputError naming file and field.
TokenizerConfig read_tokenizer_config(const std::filesystem::path& file);
// The same from the file read.
TokenizerConfig parse_tokenizer_config(const JsonFile& file);

// transformers' clean_up_tokenization: drops the space before . ? ! , and English contractions.
std::string clean_up_tokenization(std::string text);

}  // namespace specgate
