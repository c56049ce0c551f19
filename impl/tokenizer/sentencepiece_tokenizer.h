#pragma once

#include <filesystem>

#include "impl/tokenizer/tokenizer.h"

namespace specgate {

struct SentencePieceApi;

// SentencePiece's own tokenizer.model, run by the SentencePiece library, for folders without a
// tokenizer.json (the original Llama 2 and Vicuna repositories).
class SentencePieceTokenizer final : public Tokenizer {
 public:
  // Throws InputError naming the file when SentencePiece cannot load it.
  explicit SentencePieceTokenizer(const std::filesystem::path& model_file);
  ~SentencePieceTokenizer() override;
  SentencePieceTokenizer(const SentencePieceTokenizer&) = delete;
  SentencePieceTokenizer& operator=(const SentencePieceTokenizer&) = delete;

  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int64_t> ids) const override;
  int64_t vocab_size() const override;
  const SpecialTokens& special_tokens() const override { return special_; }
  std::optional<int64_t> token_id(std::string_view token) const override;

 private:
  const SentencePieceApi* api_;
  void* processor_;
  SpecialTokens special_;
};

}  // namespace specgate
