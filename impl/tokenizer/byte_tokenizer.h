#pragma once

#include <filesystem>

#include "impl/tokenizer/tokenizer.h"

namespace specgate {

// One token per byte (ids 0..255) plus BOS, EOS and PAD (256, 257, 258): lossless for any
// UTF-8 text, and what the fixture models speak. Stored as `kFileName` in a model folder.
class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr const char* kFileName = "specgate_tokenizer.json";
  static constexpr int64_t kBos = 256, kEos = 257, kPad = 258, kVocabSize = 259;

  ByteTokenizer();
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int64_t> ids) const override;
  int64_t vocab_size() const override { return kVocabSize; }
  const SpecialTokens& special_tokens() const override { return special_; }
  std::optional<int64_t> token_id(std::string_view) const override { return std::nullopt; }

  void save(const std::filesystem::path& dir) const;

 private:
  SpecialTokens special_;
};

}  // namespace specgate
