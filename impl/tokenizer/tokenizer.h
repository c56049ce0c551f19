#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace specgate {

struct SpecialTokens {
  std::optional<int64_t> bos;
  std::optional<int64_t> eos;
  std::optional<int64_t> pad;
};

// Text <-> token ids for one checkpoint. encode() adds no special tokens around the text
// (special-token strings inside it still become their ids); decode() drops special tokens.
// Both throw InputError for text that is not valid UTF-8.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  virtual std::string decode(std::span<const int64_t> ids) const = 0;
  // One past the largest id the tokenizer can produce.
  virtual int64_t vocab_size() const = 0;
  virtual const SpecialTokens& special_tokens() const = 0;
  // The id of one token written as the vocabulary writes it ("<|im_end|>", "<s>").
  virtual std::optional<int64_t> token_id(std::string_view token) const = 0;

  // The ids a prompt starts generation from, with the special tokens the checkpoint adds to
  // one sequence (its post-processor); by default BOS when there is one, then the text.
  virtual std::vector<int64_t> encode_prompt(std::string_view text) const;
};

// The tokenizer stored in a checkpoint folder: specgate's byte tokenizer, tokenizer.json (with
// tokenizer_config.json when present), or SentencePiece's tokenizer.model, in that order.
// Throws InputError naming the file and field when it holds none this build can read.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& dir);

}  // namespace specgate
